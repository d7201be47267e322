/* The RocksDB engine's part of a view (rdb_adapter.h: file deletions held off, the WAL read,
 * the live tables listed); the stock core (stock_rw.h) makes the views and reports the tables
 * to index_sync.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/engines/rocksdb/rdb_api.h"
#include "lsm_hooks/rocksdb_format/rdb_manifest.h"
#include "lsm_hooks/rocksdb_format/rdb_sstables.h"

/* ---- The live tables -------------------------------------------------------------------- */

typedef struct tables {
  engine_table_t *t; /* sorted by number */
  size_t n;
} tables_t;

static void bound_table(void *arg, uint64_t number, uint64_t largest_seq) {
  tables_t *l = arg;
  size_t i = U64_LOWER_BOUND(l->t, l->n, number, number);
  if (i < l->n && l->t[i].number == number) l->t[i].max_seq = largest_seq;
}

/* Gives each table of t[0, n) (sorted by number) without a bound the largest sequence number
   RocksDB keeps for it: the last list's (er->listed; a table's never changes), else from the
   rocksdb.sstables property (rdb_sstables.h), asked once for all: the C API's live-file list
   has none. A file the property does not list (made or gone between the two calls) keeps no
   bound, and is asked again by the next list. REQUIRES sync_mu. */
static void bound_tables(engine_rocksdb_t *er, engine_table_t *t, size_t n) {
  size_t missing = 0;
  for (size_t i = 0; i < n; i++) {
    size_t j = U64_LOWER_BOUND(er->listed, er->nlisted, number, t[i].number);
    if (t[i].max_seq == ENGINE_SEQ_UNKNOWN && j < er->nlisted && er->listed[j].number == t[i].number)
      t[i].max_seq = er->listed[j].max_seq;
    missing += t[i].max_seq == ENGINE_SEQ_UNKNOWN;
  }
  if (!missing) return;
  char *s = rocksdb_property_value_cf(er->db, er->cf, "rocksdb.sstables");
  tables_t l = {t, n};
  (void)rdb_sstables_bounds(s, bound_table, &l);
  rocksdb_free(s);
}

/* t[0, n) bounded, then kept as the tables of super version sv (none without memory); *out
   and *count. */
static int listed(engine_rocksdb_t *er, engine_table_t *t, size_t n, uint64_t sv,
                  engine_table_t **out, size_t *count) {
  bound_tables(er, t, n);
  free(er->listed);
  er->listed = malloc((n ? n : 1) * sizeof *t);
  er->nlisted = er->listed ? n : 0;
  er->listed_sv = er->listed ? sv : 0;
  if (er->listed && n) memcpy(er->listed, t, n * sizeof *t);
  *out = t;
  *count = n;
  return BFH_OK;
}

/* The live tables of the engine's column family into *out (malloc'd, sorted by number): the
   last list's while the super version is the one it was made under. The number is read
   before RocksDB's list, so a list made under a newer version than its number is made again
   next time, never the reverse. REQUIRES sync_mu. */
static int list_tables(engine_rocksdb_t *er, engine_table_t **out, size_t *n, err_t *err) {
  const uint64_t sv = rdb_super_version(er);
  if (sv && sv == er->listed_sv) {
    engine_table_t *t = malloc((er->nlisted ? er->nlisted : 1) * sizeof *t);
    if (!t) return err_set(err, BFH_E_NOMEM, "%s: no memory", er->rw.path);
    if (er->nlisted) memcpy(t, er->listed, er->nlisted * sizeof *t);
    return listed(er, t, er->nlisted, sv, out, n);
  }
  const rocksdb_livefiles_t *lf = rocksdb_livefiles(er->db);
  if (!lf) return err_set(err, BFH_E_NOMEM, "%s: rocksdb_livefiles: no memory", er->rw.path);
  int count = rocksdb_livefiles_count(lf);
  engine_table_t *t = malloc((count > 0 ? (size_t)count : 1) * sizeof *t);
  if (!t) {
    rocksdb_livefiles_destroy(lf);
    return err_set(err, BFH_E_NOMEM, "%s: no memory", er->rw.path);
  }
  size_t k = 0;
  int rc = BFH_OK;
  for (int i = 0; i < count && rc == BFH_OK; i++) {
    const char *cf = rocksdb_livefiles_column_family_name(lf, i);
    if (cf && strcmp(cf, er->cf_name) != 0) continue; /* another column family's */
    const char *name = rocksdb_livefiles_name(lf, i); /* "/000012.sst" */
    unsigned long long num;
    char ext[8];
    if (!name || sscanf(name, "/%llu.%7s", &num, ext) != 2 || strcmp(ext, "sst") != 0) {
      rc = err_set(err, BFH_E_UNSUPPORTED, "%s: live file '%s' is not a table bfh reads",
                   er->rw.path, name ? name : "?");
      break;
    }
    t[k++] = (engine_table_t){.number = num,
                              .size = rocksdb_livefiles_size(lf, i),
                              .level = rocksdb_livefiles_level(lf, i),
                              .max_seq = ENGINE_SEQ_UNKNOWN};
  }
  rocksdb_livefiles_destroy(lf);
  if (rc != BFH_OK) {
    free(t);
    return rc;
  }
  stock_tables_sort(t, k);
  return listed(er, t, k, sv, out, n);
}

int rdb_list_at_rest(stock_rw_t *s, engine_table_t **out, size_t *n, err_t *err) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)s;
  rdb_version_t v;
  int rc = rdb_version_load(s->io, s->path, 0, &v, NULL, NULL, err);
  if (rc != BFH_OK) return rc;
  const rdb_cf_t *cf = rdb_version_cf_by_name(&v, er->cf_name);
  engine_table_t *t = malloc((v.nfiles ? v.nfiles : 1) * sizeof *t);
  size_t k = 0;
  if (!t) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", s->path);
  for (size_t i = 0; t && cf && i < v.nfiles; i++)
    if (v.files[i].cf == cf->id)
      t[k++] = (engine_table_t){.number = v.files[i].number,
                                .size = v.files[i].size,
                                .level = v.files[i].level,
                                .max_seq = ENGINE_SEQ_UNKNOWN};
  rdb_version_release(&v);
  if (rc != BFH_OK) return rc;
  stock_tables_sort(t, k);
  *out = t;
  *n = k;
  return BFH_OK;
}

/* ---- Views ------------------------------------------------------------------------------ */

/* Step 1: one more view open, with file deletions held (taken if not held yet). */
static int hold_take(engine_rocksdb_t *er, err_t *err) {
  int rc = BFH_OK;
  pthread_mutex_lock(&er->hold_mu);
  if (!er->holding) {
    char *msg = NULL;
    rocksdb_disable_file_deletions(er->db, &msg);
    if (msg) {
      rc = err_set(err, BFH_E_IO, "%s: disable file deletions: %s", er->rw.path, msg);
      rocksdb_free(msg);
    } else {
      er->holding = 1;
    }
  }
  if (rc == BFH_OK) er->views_open++;
  pthread_mutex_unlock(&er->hold_mu);
  return rc;
}

/* REQUIRES hold_mu. */
static void hold_release_if_idle(engine_rocksdb_t *er) {
  if (!er->holding || er->views_open) return;
  char *msg = NULL; /* it cannot fail in RocksDB 7.8 */
  rocksdb_enable_file_deletions(er->db, 0, &msg);
  rocksdb_free(msg);
  er->holding = 0;
}

/* One view fewer; the hold is given back by the background thread's next tick, or here when
   there is no thread. */
static void hold_drop(engine_rocksdb_t *er) {
  pthread_mutex_lock(&er->hold_mu);
  er->views_open--;
  if (!er->rw.bg.started) hold_release_if_idle(er);
  pthread_mutex_unlock(&er->hold_mu);
}

/* The RocksDB engine's part of a sync (stock_rw_format_t.list): for a view, steps 1 and 2
   (the hold is the view's: held stays NULL), then step 3. Without a value index only a view
   lists the tables. REQUIRES sync_mu. */
int rdb_list(stock_rw_t *s, int view, engine_table_t **t, size_t *n, void **held, err_t *err) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)s;
  (void)held;
  if (!view && !s->sync) return BFH_OK;
  int rc = view ? hold_take(er, err) : BFH_OK; /* step 1 */
  if (rc != BFH_OK) return rc;
  if (view) rc = rdb_wal_refresh(er, err);           /* step 2 */
  if (rc == BFH_OK) rc = list_tables(er, t, n, err); /* step 3 */
  if (rc != BFH_OK && view) hold_drop(er);
  return rc;
}

void rdb_unhold(stock_rw_t *s, void *held) {
  (void)held;
  hold_drop((engine_rocksdb_t *)s);
}

const stock_segs_t *rdb_segs(stock_rw_t *s, size_t i) {
  return i == 0 ? &((engine_rocksdb_t *)s)->segs : NULL;
}

/* stock_rw_format_t.tick: the hold of the views closed since the last tick given back. */
void rdb_tick(stock_rw_t *s) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)s;
  pthread_mutex_lock(&er->hold_mu);
  hold_release_if_idle(er);
  pthread_mutex_unlock(&er->hold_mu);
}
