/* A predicate's keys by one method compared with SCAN's, key by key, for the tests of the
 * public API (header-only; include it after cmocka.h, bfh.h and the C headers it uses:
 * stdio, stdlib, string). Keys are at most SAME_AS_SCAN_KEY_BYTES - 1 bytes; cap is the most
 * keys a search may find.
 *
 *   uint64_t want;
 *   bfh_search_stats st = same_as_scan(db, "n BETWEEN 1 AND 5", BFH_SEARCH_AUTO, NKEYS, &want);
 */
#ifndef BFH_TESTS_API_SAME_AS_SCAN_H
#define BFH_TESTS_API_SAME_AS_SCAN_H

#define SAME_AS_SCAN_KEY_BYTES 16

typedef struct same_as_scan_keys {
  char (*v)[SAME_AS_SCAN_KEY_BYTES];
  unsigned n, cap;
} same_as_scan_keys_t;

static inline int same_as_scan_on_key(void *arg, const void *key, size_t len) {
  same_as_scan_keys_t *k = arg;
  assert_true(len < SAME_AS_SCAN_KEY_BYTES && k->n < k->cap);
  memcpy(k->v[k->n], key, len);
  k->v[k->n++][len] = 0;
  return 0;
}

static inline int same_as_scan_cmp(const void *a, const void *b) {
  return strcmp(a, b);
}

/* where by method: its keys equal SCAN's (the test fails naming the first that differs);
   returns its stats and sets *scan_results. */
static inline bfh_search_stats same_as_scan(bfh_db *db, const char *where, bfh_method method,
                                            unsigned cap, uint64_t *scan_results) {
  same_as_scan_keys_t got = {calloc(cap, SAME_AS_SCAN_KEY_BYTES), 0, cap};
  same_as_scan_keys_t scan = {calloc(cap, SAME_AS_SCAN_KEY_BYTES), 0, cap};
  assert_non_null(got.v);
  assert_non_null(scan.v);
  bfh_search_stats st, sst;
  assert_int_equal(bfh_query(db, where, method, 0, same_as_scan_on_key, &got, &st), BFH_OK);
  assert_int_equal(bfh_query(db, where, BFH_SEARCH_SCAN, 0, same_as_scan_on_key, &scan, &sst),
                   BFH_OK);
  if (got.n != scan.n)
    fail_msg("'%s' by %s: %u keys, SCAN %u", where, bfh_method_name(method), got.n, scan.n);
  qsort(got.v, got.n, SAME_AS_SCAN_KEY_BYTES, same_as_scan_cmp);
  qsort(scan.v, scan.n, SAME_AS_SCAN_KEY_BYTES, same_as_scan_cmp);
  for (unsigned i = 0; i < got.n; i++)
    if (strcmp(got.v[i], scan.v[i]))
      fail_msg("'%s' by %s: key %s, SCAN's %s", where, bfh_method_name(method), got.v[i],
               scan.v[i]);
  *scan_results = scan.n;
  free(got.v);
  free(scan.v);
  return st;
}

#endif
