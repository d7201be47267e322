/* Two generations of one LevelDB database, for the tests that rebuild a database at the same
 * path (leveldb_cache_identity_test, leveldb_readonly_replace_test): keys key%06d, values of
 * VAL_BYTES random bytes that depend on the generation, and a check that every search method
 * finds exactly the right key for SAMPLES values, and the writing of a generation with stock
 * LevelDB. The includer defines NKEYS, VAL_BYTES, SAMPLES, ROUNDS and KEYS_PER_ROUND first
 * (ROUNDS x KEYS_PER_ROUND <= NKEYS), and includes cmocka.h.
 */
#ifndef BFH_TESTS_API_LDB_GENERATIONS_H
#define BFH_TESTS_API_LDB_GENERATIONS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <leveldb/c.h>
#include <stdlib.h>

#include "bfh.h"
#include "tests/leveldb_test_util.h" /* ldb_test_settle; testbed.h: ldb_sstables_parse */
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

/* Creates a LevelDB database in dir (uncompressed) and writes generation gen's first
   ROUNDS x KEYS_PER_ROUND keys, one table per round with no compaction left. Returns it open
   (the caller closes it), and its tables in *tables as "number:size " pairs sorted by number
   (malloc'd): two generations with equal strings have equal table numbers and sizes. */
static leveldb_t *ldb_gen_create(const char *dir, int gen, char **tables) {
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, 1);
  leveldb_options_set_error_if_exists(o, 1);
  leveldb_options_set_compression(o, leveldb_no_compression);
  char *err = NULL;
  leveldb_t *db = leveldb_open(o, dir, &err);
  leveldb_options_destroy(o);
  if (err) fail_msg("leveldb_open %s: %s", dir, err);
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  for (int r = 0; r < ROUNDS; r++) {
    for (int k = r * KEYS_PER_ROUND; k < (r + 1) * KEYS_PER_ROUND && !err; k++) {
      char kb[32], vb[VAL_BYTES];
      leveldb_put(db, wo, kb, key_bytes(k, kb), vb, value_bytes(gen, k, vb), &err);
    }
    assert_null(err);
    ldb_test_settle(db); /* one table per round, no compaction left */
  }
  leveldb_writeoptions_destroy(wo);
  char *list = leveldb_property_value(db, "leveldb.sstables");
  assert_non_null(list);
  ldb_sstable_t *t;
  size_t nt;
  err_t e;
  assert_int_equal(ldb_sstables_parse(list, &t, &nt, &e), BFH_OK);
  leveldb_free(list);
  assert_true(nt >= 2);
  for (size_t i = 0; i < nt; i++)
    for (size_t j = i + 1; j < nt; j++)
      if (t[j].number < t[i].number) {
        ldb_sstable_t x = t[i];
        t[i] = t[j];
        t[j] = x;
      }
  char *out = malloc(4096);
  assert_non_null(out);
  size_t at = 0;
  out[0] = '\0';
  for (size_t i = 0; i < nt && at < 4096; i++)
    at += (size_t)snprintf(out + at, 4096 - at, "%llu:%llu ", (unsigned long long)t[i].number,
                           (unsigned long long)t[i].size);
  free(t);
  *tables = out;
  return db;
}

#endif
