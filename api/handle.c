/* handle.h's implementation: the per-thread last error (each thread keeps a few (handle id,
 * message) pairs in thread-local storage; handle ids come from a global counter and are never
 * reused, so a message never outlives its handle's identity; id 0 is "no handle"), the
 * status names and the versioned structs' copy-out.
 */
#include "api/handle.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/status.h"

/* The internal status codes are the public ones: a status goes up unchanged. */
#define SAME_STATUS(name) ((int)ST_##name == (int)BFH_##name)
_Static_assert(SAME_STATUS(OK) && SAME_STATUS(NOT_FOUND) && SAME_STATUS(E_INVALID) &&
                   SAME_STATUS(E_IO) && SAME_STATUS(E_CORRUPT) && SAME_STATUS(E_NOMEM) &&
                   SAME_STATUS(E_BUSY) && SAME_STATUS(E_UNSUPPORTED),
               "util/status.h and include/bfh.h disagree");
#undef SAME_STATUS

/* ---- Last error, per thread and handle -------------------------------------------------- */

#define LAST_ERROR_SLOTS 8

typedef struct last_error {
  uint64_t id;
  uint64_t stamp;
  int used;
  char msg[ERR_MSG_BYTES];
} last_error_t;

static _Thread_local last_error_t tl_errors[LAST_ERROR_SLOTS];
static _Thread_local uint64_t tl_stamp;
static _Atomic uint64_t next_id = 1;

uint64_t api_handle_id(void) {
  return atomic_fetch_add(&next_id, 1);
}

static void remember(uint64_t id, const char *msg) {
  int slot = -1;
  for (int i = 0; i < LAST_ERROR_SLOTS && slot < 0; i++)
    if (tl_errors[i].used && tl_errors[i].id == id) slot = i;
  for (int i = 0; i < LAST_ERROR_SLOTS && slot < 0; i++)
    if (!tl_errors[i].used) slot = i;
  if (slot < 0) { /* every slot taken: replace the least recently written */
    slot = 0;
    for (int i = 1; i < LAST_ERROR_SLOTS; i++)
      if (tl_errors[i].stamp < tl_errors[slot].stamp) slot = i;
  }
  last_error_t *e = &tl_errors[slot];
  e->used = 1;
  e->id = id;
  e->stamp = ++tl_stamp;
  snprintf(e->msg, sizeof e->msg, "%s", msg && msg[0] ? msg : "unknown error");
}

int api_fail(const bfh_db *db, int rc, const err_t *err) {
  if (rc < 0) {
    char buf[ERR_MSG_BYTES];
    if (err && err->msg[0])
      snprintf(buf, sizeof buf, "%s", err->msg);
    else
      snprintf(buf, sizeof buf, "%s", bfh_strerror(rc));
    remember(db ? db->id : 0, buf);
  }
  return rc;
}

int api_failf(const bfh_db *db, int code, const char *fmt, ...) {
  err_t e;
  e.code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e.msg, sizeof e.msg, fmt, ap);
  va_end(ap);
  return api_fail(db, code, &e);
}

const char *bfh_last_error(const bfh_db *db) {
  uint64_t id = db ? db->id : 0;
  for (int i = 0; i < LAST_ERROR_SLOTS; i++)
    if (tl_errors[i].used && tl_errors[i].id == id) return tl_errors[i].msg;
  return "";
}

const char *bfh_strerror(int status) {
  switch (status) {
    case BFH_OK:
      return "ok";
    case BFH_NOT_FOUND:
      return "not found";
    case BFH_E_INVALID:
      return "invalid argument or option";
    case BFH_E_IO:
      return "i/o error";
    case BFH_E_CORRUPT:
      return "corrupt file";
    case BFH_E_NOMEM:
      return "out of memory";
    case BFH_E_BUSY:
      return "database is in use by another handle or process";
    case BFH_E_UNSUPPORTED:
      return "not supported";
    default:
      return "unknown status";
  }
}

void bfh_free(void *p) {
  free(p);
}

const char *bfh_version(void) {
  return BFH_VERSION_STRING;
}

/* ---- Versioned structs (doc/api.md "ABI") ------------------------------------------------- */

void api_copy_out(void *dst, size_t dst_size, const void *src, size_t src_size) {
  size_t n = dst_size < src_size ? dst_size : src_size;
  memcpy(dst, src, n);
  if (dst_size > n) memset((char *)dst + n, 0, dst_size - n);
}
