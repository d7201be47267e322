/* A search started over while it meets a file that vanished under it (search.h,
 * search_execute_retrying): the read-only engines, whose files another process deletes, give
 * BFH_E_BUSY for that, and the search runs again with the same plan and hash from a new view.
 * Its keys are collected, and reported only once an attempt read every table it listed, so a
 * key is never reported by an attempt that could have missed others.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/search.h"

typedef struct found {
  char **keys;
  size_t *lens;
  size_t n, cap;
  int nomem;
} found_t;

static int collect(void *arg, const void *key, size_t key_len) {
  found_t *f = arg;
  if (f->n == f->cap) {
    size_t c = f->cap ? 2 * f->cap : 64;
    char **k = realloc(f->keys, c * sizeof *k);
    if (k) f->keys = k;
    size_t *l = k ? realloc(f->lens, c * sizeof *l) : NULL;
    if (l) f->lens = l, f->cap = c;
    if (!l) return f->nomem = 1;
  }
  char *k = malloc(key_len ? key_len : 1);
  if (!k) return f->nomem = 1;
  memcpy(k, key, key_len);
  f->keys[f->n] = k;
  f->lens[f->n++] = key_len;
  return 0;
}

static void found_clear(found_t *f) {
  for (size_t i = 0; i < f->n; i++) free(f->keys[i]);
  f->n = 0;
  f->nomem = 0;
}

static uint64_t retry_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int search_execute_retrying(const search_ctx_t *c, const search_query_t *q, int attempts,
                            atomic_ullong *retries, bfh_match_fn fn, void *arg,
                            bfh_search_stats *st, err_t *err) {
  uint64_t t0 = retry_now_ns();
  found_t f = {0};
  bfh_search_stats s;
  memset(&s, 0, sizeof s);
  int rc = BFH_E_BUSY;
  for (int attempt = 0; attempt < attempts && rc == BFH_E_BUSY; attempt++) {
    if (attempt && retries) atomic_fetch_add(retries, 1);
    found_clear(&f);
    rc = search_execute(c, q, collect, &f, &s, err); /* the same plan and hash every time */
    if (rc == BFH_OK && f.nomem) rc = err_set(err, BFH_E_NOMEM, "search: out of memory for keys");
  }
  if (rc == BFH_E_BUSY)
    err_prefix(err,
               "search gave up after %d attempts (the database changed under each): ", attempts);
  s.results = 0;
  for (size_t i = 0; rc == BFH_OK && i < f.n; i++) {
    s.results++;
    if (fn && fn(arg, f.keys[i], f.lens[i])) break;
  }
  found_clear(&f);
  free(f.keys);
  free(f.lens);
  s.elapsed_ns = retry_now_ns() - t0;
  if (st) *st = s;
  return rc;
}
