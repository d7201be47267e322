/* Helpers of the tests that write databases with stock RocksDB 7.8 through its C API
 * (<rocksdb/c.h>, linked into those test executables only): a database with column families
 * and a merge operator that concatenates operands. Header-only; the caller asserts.
 */
#ifndef BFH_TESTS_ROCKSDB_TEST_UTIL_H
#define BFH_TESTS_ROCKSDB_TEST_UTIL_H

#include <rocksdb/c.h>
#include <stdlib.h>
#include <string.h>

#define RDBT_MAX_CF 4

typedef struct rdbt {
  rocksdb_t *db;
  rocksdb_options_t *opt;
  rocksdb_mergeoperator_t *merge;                  /* owned by opt */
  rocksdb_column_family_handle_t *cf[RDBT_MAX_CF]; /* [0] the default one */
  int ncf;
} rdbt_t;

static char *rdbt_full_merge(void *s, const char *k, size_t kn, const char *ev, size_t evn,
                             const char *const *ops, const size_t *opn, int nops, unsigned char *ok,
                             size_t *outn) {
  (void)s, (void)k, (void)kn;
  size_t n = ev ? evn : 0;
  for (int i = 0; i < nops; i++) n += opn[i];
  char *out = malloc(n ? n : 1), *p = out;
  if (ev && evn) memcpy(p, ev, evn), p += evn;
  for (int i = 0; i < nops; i++) memcpy(p, ops[i], opn[i]), p += opn[i];
  *outn = n;
  *ok = 1;
  return out;
}
static char *rdbt_partial_merge(void *s, const char *k, size_t kn, const char *const *ops,
                                const size_t *opn, int nops, unsigned char *ok, size_t *outn) {
  return rdbt_full_merge(s, k, kn, NULL, 0, ops, opn, nops, ok, outn);
}
static void rdbt_delete_value(void *s, const char *v, size_t n) {
  (void)s, (void)n;
  free((void *)v);
}
static void rdbt_merge_destroy(void *s) {
  (void)s;
}
static const char *rdbt_merge_name(void *s) {
  (void)s;
  return "bfh.test.concat";
}

/* Opens (creating) the database dir with the default column family and creates the column
   families names[0..n-1] (t->cf[1..n]). recycle > 0 sets recycle_log_file_num (with the
   recovery mode RocksDB 7.8 requires for it). No automatic flush or compaction. 0 or -1. */
static inline int rdbt_open(rdbt_t *t, const char *dir, int recycle, const char *const *names,
                            int n) {
  char *e = NULL;
  memset(t, 0, sizeof *t);
  t->opt = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(t->opt, 1);
  rocksdb_options_set_write_buffer_size(t->opt, 64 << 20);
  rocksdb_options_set_disable_auto_compactions(t->opt, 1);
  t->merge = rocksdb_mergeoperator_create(NULL, rdbt_merge_destroy, rdbt_full_merge,
                                          rdbt_partial_merge, rdbt_delete_value, rdbt_merge_name);
  rocksdb_options_set_merge_operator(t->opt, t->merge);
  if (recycle > 0) {
    rocksdb_options_set_recycle_log_file_num(t->opt, (size_t)recycle);
    rocksdb_options_set_wal_recovery_mode(t->opt, 3); /* kSkipAnyCorruptedRecords */
  }
  t->db = rocksdb_open(t->opt, dir, &e); /* creates it: the default column family */
  if (!t->db) return free(e), -1;
  for (int i = 0; i < n; i++) { /* the others, created on a live database */
    rocksdb_column_family_handle_t *h = rocksdb_create_column_family(t->db, t->opt, names[i], &e);
    if (e) return free(e), -1;
    rocksdb_column_family_handle_destroy(h);
  }
  rocksdb_close(t->db);
  /* Reopened with every column family, for a handle of each (the default one included). */
  const char *all[RDBT_MAX_CF] = {"default"};
  const rocksdb_options_t *opts[RDBT_MAX_CF] = {t->opt};
  t->ncf = n + 1 < RDBT_MAX_CF ? n + 1 : RDBT_MAX_CF;
  for (int i = 1; i < t->ncf; i++) all[i] = names[i - 1], opts[i] = t->opt;
  t->db = rocksdb_open_column_families(t->opt, dir, t->ncf, all, opts, t->cf, &e);
  if (!t->db) return free(e), -1;
  return 0;
}

/* The column family handle i (0: the default one). */
static inline rocksdb_column_family_handle_t *rdbt_cf(rdbt_t *t, int i) {
  return t->cf[i];
}

static inline int rdbt_flush(rdbt_t *t, int i) {
  char *e = NULL;
  rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
  rocksdb_flushoptions_set_wait(fo, 1);
  rocksdb_flush_cf(t->db, fo, rdbt_cf(t, i), &e);
  rocksdb_flushoptions_destroy(fo);
  return e ? (free(e), -1) : 0;
}

static inline int rdbt_write(rdbt_t *t, rocksdb_writebatch_t *b) {
  char *e = NULL;
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  rocksdb_write(t->db, wo, b, &e);
  rocksdb_writeoptions_destroy(wo);
  return e ? (free(e), -1) : 0;
}

static inline void rdbt_close(rdbt_t *t) {
  for (int i = 0; i < t->ncf; i++)
    if (t->cf[i]) rocksdb_column_family_handle_destroy(t->cf[i]);
  if (t->db) rocksdb_close(t->db);
  if (t->opt) rocksdb_options_destroy(t->opt); /* destroys the merge operator too */
  memset(t, 0, sizeof *t);
}

#endif
