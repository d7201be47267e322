/* path: see util/path.h. */
#include "util/path.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Appends "/" and the n bytes of name to the absolute path cur (cap bytes); 0 if it fits. */
static int append(char *cur, size_t cap, const char *name, size_t n) {
  size_t len = strlen(cur);
  if (len == 1) len = 0; /* "/" */
  if (len + 1 + n + 1 > cap) return -1;
  cur[len] = '/';
  memcpy(cur + len + 1, name, n);
  cur[len + 1 + n] = '\0';
  return 0;
}

int path_resolve(const char *path, char *out, size_t cap, err_t *err) {
  if (!path || !*path) return err_set(err, ST_E_INVALID, "empty path");
  char cur[PATH_MAX], real[PATH_MAX];
  if (path[0] == '/') {
    strcpy(cur, "/");
  } else if (!realpath(".", cur)) {
    return err_errno(err, errno, "%s: the working directory", path);
  }
  int exists = 1; /* cur exists: the next component is looked up */
  for (const char *p = path; *p;) {
    while (*p == '/') p++;
    size_t n = strcspn(p, "/");
    if (n == 0 || (n == 1 && p[0] == '.')) {
      p += n;
      continue;
    }
    if (n == 2 && p[0] == '.' && p[1] == '.') {
      /* cur holds no symlink and no "..": its parent is its dirname. */
      char *slash = strrchr(cur, '/');
      slash[slash == cur ? 1 : 0] = '\0';
      exists = 1; /* every ancestor of a looked-up path is one */
      p += n;
      continue;
    }
    if (append(cur, sizeof cur, p, n) != 0) return err_set(err, ST_E_INVALID, "%s: too long", path);
    p += n;
    if (!exists) continue;
    struct stat sb;
    if (lstat(cur, &sb) != 0) {
      if (errno == ENOENT) {
        exists = 0;
        continue;
      }
      if (errno == ENOTDIR)
        return err_set(err, ST_E_INVALID, "%s: a component of %s is not a directory", path, cur);
      return err_errno(err, errno, "%s: lstat %s", path, cur);
    }
    if (!realpath(cur, real)) {
      if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)
        return err_set(err, ST_E_INVALID, "%s: %s leads nowhere (%s)", path, cur, strerror(errno));
      return err_errno(err, errno, "%s: realpath %s", path, cur);
    }
    strcpy(cur, real);
  }
  if (strlen(cur) + 1 > cap) return err_set(err, ST_E_INVALID, "%s: too long", path);
  memcpy(out, cur, strlen(cur) + 1);
  return ST_OK;
}

int path_within(const char *dir, const char *p) {
  size_t n = strlen(dir);
  if (n == 1 && dir[0] == '/') return p[0] == '/';
  return strncmp(dir, p, n) == 0 && (p[n] == '\0' || p[n] == '/');
}
