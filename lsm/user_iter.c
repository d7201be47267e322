/* Live entries by user key over an internal-key iterator (user_iter.h). */
#include "lsm/user_iter.h"

#include <stdlib.h>
#include <string.h>

#include "lsm/internal_key.h"

void user_iter_init(user_iter_t *u, iterator_t *in, uint64_t max_seq) {
  memset(u, 0, sizeof *u);
  u->in = in;
  u->max_seq = max_seq;
  err_clear(&u->err);
}

void user_iter_release(user_iter_t *u) {
  free(u->skip);
  free(u->target);
  u->skip = u->target = NULL;
  u->skip_cap = u->target_cap = 0;
}

static void fail(user_iter_t *u, int rc, const char *what) {
  u->valid = 0;
  u->status = err_set(&u->err, rc, "iterator: %s", what);
}

/* *buf holds at least n bytes (growing it); 0, or -1 on no memory (then failed). */
static int reserve(user_iter_t *u, uint8_t **buf, size_t *cap, size_t n) {
  if (n <= *cap) return 0;
  uint8_t *p = realloc(*buf, n * 2 + 16);
  if (!p) {
    fail(u, ST_E_NOMEM, "out of memory");
    return -1;
  }
  *buf = p;
  *cap = n * 2 + 16;
  return 0;
}

static int set_skip(user_iter_t *u, const uint8_t *key, size_t len) {
  if (reserve(u, &u->skip, &u->skip_cap, len)) return -1;
  memcpy(u->skip, key, len);
  u->skip_len = len;
  return 0;
}

/* Moves the input to the next live entry at or below max_seq; has_skip: hide u->skip. */
static void find_next(user_iter_t *u, int has_skip) {
  iterator_t *m = u->in;
  u->valid = 0;
  for (; iterator_valid(m); iterator_next(m)) {
    size_t klen;
    const uint8_t *k = iterator_key(m, &klen);
    internal_key_parts_t p;
    if (internal_key_parse(k, klen, &p) != 0) {
      fail(u, ST_E_CORRUPT, "malformed internal key");
      return;
    }
    if (p.seq > u->max_seq) continue;
    if (has_skip && bytewise_compare(p.user_key, p.user_len, u->skip, u->skip_len) == 0) continue;
    if (p.type == LSM_TYPE_DELETION) {
      if (set_skip(u, p.user_key, p.user_len)) return;
      has_skip = 1;
      continue;
    }
    u->key = p.user_key;
    u->key_len = p.user_len;
    u->val = iterator_value(m, &u->val_len);
    u->valid = 1;
    return;
  }
  err_t e;
  int rc = iterator_status(m, &e);
  if (rc != ST_OK) {
    u->status = rc;
    u->err = e;
  }
}

void user_iter_seek_first(user_iter_t *u) {
  if (u->status != ST_OK) return;
  iterator_seek_first(u->in);
  find_next(u, 0);
}

void user_iter_seek(user_iter_t *u, const void *key, size_t key_len) {
  if (u->status != ST_OK ||
      reserve(u, &u->target, &u->target_cap, key_len + INTERNAL_KEY_TAG_BYTES))
    return;
  size_t n = internal_key_encode(u->target, key, key_len, u->max_seq, LSM_TYPE_VALUE);
  iterator_seek(u->in, u->target, n);
  find_next(u, 0);
}

int user_iter_valid(const user_iter_t *u) {
  return u->valid && u->status == ST_OK;
}

void user_iter_next(user_iter_t *u) {
  if (!user_iter_valid(u) || set_skip(u, u->key, u->key_len)) return;
  iterator_next(u->in);
  find_next(u, 1);
}

const void *user_iter_key(const user_iter_t *u, size_t *len) {
  *len = u->key_len;
  return u->key;
}

const void *user_iter_value(const user_iter_t *u, size_t *len) {
  *len = u->val_len;
  return u->val;
}

int user_iter_status(const user_iter_t *u, err_t *err) {
  if (u->status != ST_OK) err_set(err, u->status, "%s", u->err.msg);
  return u->status;
}
