/* Directories for the drivers: mkdir -p and rm -r (exp.h). */
#include "experiments/exp.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

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
