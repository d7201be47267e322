/* path: see util/path.h. */
#include "util/path.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *path_join(const char *dir, const char *name) {
  size_t d = strlen(dir), n = strlen(name);
  int slash = d == 0 || dir[d - 1] != '/';
  char *p = malloc(d + (size_t)slash + n + 1);
  if (!p) return NULL;
  memcpy(p, dir, d);
  if (slash) p[d] = '/';
  memcpy(p + d + (size_t)slash, name, n + 1);
  return p;
}

char *path_fmt(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *p = NULL;
  if (vasprintf(&p, fmt, ap) < 0) p = NULL;
  va_end(ap);
  return p;
}

/* A growing absolute path. */
typedef struct cur {
  char *s;
  size_t len, cap;
} cur_t;

/* Makes cur s (n bytes); 0, or -1 on no memory. */
static int cur_set(cur_t *c, const char *s, size_t n) {
  if (n + 1 > c->cap) {
    size_t cap = c->cap ? c->cap : 256;
    while (cap < n + 1) cap *= 2;
    char *p = realloc(c->s, cap);
    if (!p) return -1;
    c->s = p;
    c->cap = cap;
  }
  memmove(c->s, s, n);
  c->s[n] = '\0';
  c->len = n;
  return 0;
}

/* Appends "/" and the n bytes of name; 0, or -1 on no memory. */
static int cur_append(cur_t *c, const char *name, size_t n) {
  size_t len = c->len == 1 ? 0 : c->len; /* "/" */
  if (len + 1 + n + 1 > c->cap) {
    size_t cap = c->cap ? c->cap : 256;
    while (cap < len + 1 + n + 1) cap *= 2;
    char *p = realloc(c->s, cap);
    if (!p) return -1;
    c->s = p;
    c->cap = cap;
  }
  c->s[len] = '/';
  memcpy(c->s + len + 1, name, n);
  c->len = len + 1 + n;
  c->s[c->len] = '\0';
  return 0;
}

/* Replaces cur with its real path (realpath(3)); ST_OK or an error naming path. */
static int cur_realpath(cur_t *c, const char *path, err_t *err) {
  char *real = realpath(c->s, NULL);
  if (!real) {
    if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)
      return err_set(err, ST_E_INVALID, "%s: %s leads nowhere (%s)", path, c->s, strerror(errno));
    return err_errno(err, errno, "%s: realpath %s", path, c->s);
  }
  int rc = cur_set(c, real, strlen(real));
  free(real);
  return rc == 0 ? ST_OK : err_set(err, ST_E_NOMEM, "%s: no memory to resolve it", path);
}

static int resolve(const char *path, cur_t *cur, err_t *err) {
  if (path[0] == '/') {
    if (cur_set(cur, "/", 1) != 0) return err_set(err, ST_E_NOMEM, "%s: no memory", path);
  } else {
    char *wd = realpath(".", NULL);
    if (!wd) return err_errno(err, errno, "%s: the working directory", path);
    int rc = cur_set(cur, wd, strlen(wd));
    free(wd);
    if (rc != 0) return err_set(err, ST_E_NOMEM, "%s: no memory", path);
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
      char *slash = strrchr(cur->s, '/');
      slash[slash == cur->s ? 1 : 0] = '\0';
      cur->len = strlen(cur->s);
      exists = 1; /* every ancestor of a looked-up path is one */
      p += n;
      continue;
    }
    if (cur_append(cur, p, n) != 0) return err_set(err, ST_E_NOMEM, "%s: no memory", path);
    p += n;
    if (!exists) continue;
    struct stat sb;
    if (lstat(cur->s, &sb) != 0) {
      if (errno == ENOENT) {
        exists = 0;
        continue;
      }
      if (errno == ENOTDIR)
        return err_set(err, ST_E_INVALID, "%s: a component of %s is not a directory", path, cur->s);
      return err_errno(err, errno, "%s: lstat %s", path, cur->s);
    }
    int rc = cur_realpath(cur, path, err);
    if (rc != ST_OK) return rc;
  }
  return ST_OK;
}

int path_resolve(const char *path, char **out, err_t *err) {
  *out = NULL;
  if (!path || !*path) return err_set(err, ST_E_INVALID, "empty path");
  cur_t cur = {0};
  int rc = resolve(path, &cur, err);
  if (rc != ST_OK) {
    free(cur.s);
    return rc;
  }
  *out = cur.s;
  return ST_OK;
}

int path_within(const char *dir, const char *p) {
  size_t n = strlen(dir);
  if (n == 1 && dir[0] == '/') return p[0] == '/';
  return strncmp(dir, p, n) == 0 && (p[n] == '\0' || p[n] == '/');
}
