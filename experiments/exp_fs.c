/* Files and directories for the drivers: mkdir -p, rm -r and an fopen of regular files only
   (exp.h). */
#include "experiments/exp.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int exp_mkdir_p(const char *path) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
  return 0;
}

/* The rows of c's existing file whose costs cell names another profile than c's, if its
   header is c's (malloc'd text, or NULL). The drivers write no quoted cells. */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

void exp_rmtree(const char *path) {
  nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

FILE *exp_fopen(const char *path, const char *mode) {
  int flags = mode[0] == 'r'   ? O_RDONLY
              : mode[0] == 'w' ? O_WRONLY | O_CREAT | O_TRUNC
              : mode[0] == 'a' ? O_WRONLY | O_CREAT | O_APPEND
                               : -1;
  if (flags < 0) {
    errno = EINVAL;
    return NULL;
  }
  int fd = open(path, flags | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return NULL;
  struct stat st;
  int fl = fcntl(fd, F_GETFL);
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || fl < 0 ||
      fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
    close(fd);
    errno = EINVAL;
    return NULL;
  }
  FILE *f = fdopen(fd, mode);
  if (!f) close(fd);
  return f;
}
