/* err_t: a status code with a message that says what failed and where.
 *
 * Internal functions return a status code (util/status.h) and, on failure, fill the
 * caller's err_t (which may be NULL) so the message travels up to bfh_last_error():
 *   return err_set(err, ST_E_CORRUPT, "table %06llu.ldb: block at %llu: checksum mismatch",
 *                  ...);
 * A caller adding context keeps the code: err_prefix(err, "compaction: ").
 */
#ifndef BFH_UTIL_ERR_H
#define BFH_UTIL_ERR_H

#include "util/status.h"

#define ERR_MSG_BYTES 512

typedef struct err {
  int code;
  char msg[ERR_MSG_BYTES];
} err_t;

/* Sets e (if not NULL) to code and the formatted message; returns code. */
int err_set(err_t *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* err_set with ": strerror(errno)" appended and code ST_E_IO (ST_E_NOMEM for ENOMEM). */
int err_errno(err_t *e, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prepends the formatted text to e's message; returns e->code (ST_E_IO if e is NULL). */
int err_prefix(err_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void err_clear(err_t *e) {
  if (e) {
    e->code = ST_OK;
    e->msg[0] = '\0';
  }
}

#endif
