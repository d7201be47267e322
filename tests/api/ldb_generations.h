/* Two generations of one LevelDB database, for the tests that rebuild a database at the same
 * path (leveldb_cache_identity_test, leveldb_readonly_replace_test): keys key%06d, values of
 * VAL_BYTES random bytes that depend on the generation, and a check that every search method
 * finds exactly the right key for SAMPLES values. The includer defines NKEYS, VAL_BYTES and
 * SAMPLES first.
 */
#ifndef BFH_TESTS_API_LDB_GENERATIONS_H
#define BFH_TESTS_API_LDB_GENERATIONS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bfh.h"
#include "util/random.h"

static size_t key_bytes(int key, char *out) {
  return (size_t)snprintf(out, 32, "key%06d", key);
}

/* The value of key in database generation gen: VAL_BYTES random bytes. */
static size_t value_bytes(int gen, int key, char *out) {
  rng_t g;
  rng_init(&g, (uint64_t)gen * 1000003u + (uint64_t)key);
  for (int i = 0; i < VAL_BYTES; i++) out[i] = (char)rng_below(&g, 256);
  return VAL_BYTES;
}

typedef struct hits {
  int count[NKEYS];
  int bad;
} hits_t;

static int on_hit(void *arg, const void *key, size_t len) {
  hits_t *h = arg;
  char buf[32];
  int k;
  if (len >= sizeof buf) return h->bad++, 0;
  memcpy(buf, key, len);
  buf[len] = '\0';
  if (sscanf(buf, "key%d", &k) != 1 || k < 0 || k >= NKEYS) return h->bad++, 0;
  h->count[k]++;
  return 0;
}

static const bfh_method methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                     BFH_SEARCH_SLICED, BFH_SEARCH_AUTO};

/* Every method finds exactly key k for the value of k in generation gen, for SAMPLES keys
   spread over the keys. Misses are counted per method and reported together (naming the
   method and the first key missed); returns 1 if any method missed a value. */
static int generation_missed(bfh_db *db, int gen, const char *what) {
  static hits_t h;
  int failed = 0;
  for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
    int missed = 0, first = -1;
    for (int s = 0; s < SAMPLES; s++) {
      int k = (int)((uint64_t)s * (NKEYS - 1) / (SAMPLES - 1));
      char vb[VAL_BYTES];
      memset(&h, 0, sizeof h);
      int rc = bfh_search(db, vb, value_bytes(gen, k, vb), methods[m], on_hit, &h, NULL);
      if (rc != BFH_OK)
        fail_msg("%s, %s: search: %s", what, bfh_method_name(methods[m]), bfh_last_error(db));
      assert_int_equal(h.bad, 0);
      for (int j = 0; j < NKEYS; j++)
        if (j != k && h.count[j])
          fail_msg("%s, %s: key%06d reported for the value of key%06d", what,
                   bfh_method_name(methods[m]), j, k);
      assert_true(h.count[k] <= 1);
      if (!h.count[k] && !missed++) first = k;
    }
    if (missed)
      print_message("%s, %s: %d of %d values missed (first: the value of key%06d)\n", what,
                    bfh_method_name(methods[m]), missed, SAMPLES, first);
    failed |= missed != 0;
  }
  return failed;
}

#endif
