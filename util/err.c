#include "util/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_set(err_t *e, int code, const char *fmt, ...) {
  if (!e) return code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  e->code = code;
  return code;
}

int err_errno(err_t *e, int errnum, const char *fmt, ...) {
  int code = errnum == ENOMEM ? ST_E_NOMEM : ST_E_IO;
  if (!e) return code;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n < sizeof e->msg)
    snprintf(e->msg + n, sizeof e->msg - (size_t)n, ": %s", strerror(errnum));
  e->code = code;
  return code;
}

int err_prefix(err_t *e, const char *fmt, ...) {
  if (!e) return ST_E_IO;
  char head[ERR_MSG_BYTES];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  if (n <= 0) return e->code;
  size_t hn = (size_t)n < sizeof e->msg - 1 ? (size_t)n : sizeof e->msg - 1;
  size_t old = strnlen(e->msg, sizeof e->msg - 1);
  if (hn + old > sizeof e->msg - 1) old = sizeof e->msg - 1 - hn; /* keep the tail cut */
  memmove(e->msg + hn, e->msg, old);
  memcpy(e->msg, head, hn);
  e->msg[hn + old] = '\0';
  return e->code;
}
