/* Views of the RocksDB engine (rdb_adapter.h: file deletions held off, the WAL read, the live
 * tables listed and reported), the background thread that has index_sync read new tables, and
 * the table reader index_sync calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bfh.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/engines/rocksdb/rdb_api.h"
#include "lsm_hooks/rocksdb_format/rdb_sstables.h"
#include "index/index_sync.h"

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

/* Gives t[0, n) (sorted by number) the largest sequence number RocksDB keeps for each file,
   from the rocksdb.sstables property (rdb_sstables.h): the C API's live-file list has none. A
   file the property does not list (made or gone between the two calls) keeps no bound. */
static void bound_tables(engine_rocksdb_t *er, engine_table_t *t, size_t n) {
  char *s = rocksdb_property_value_cf(er->db, er->cf, "rocksdb.sstables");
  tables_t l = {t, n};
  (void)rdb_sstables_bounds(s, bound_table, &l);
  rocksdb_free(s);
}

/* The live tables of the engine's column family into *out (malloc'd, sorted by number). */
static int list_tables(engine_rocksdb_t *er, engine_table_t **out, size_t *n, err_t *err) {
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
  bound_tables(er, t, k);
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

void rdb_hold_release_idle(engine_rocksdb_t *er) {
  pthread_mutex_lock(&er->hold_mu);
  hold_release_if_idle(er);
  pthread_mutex_unlock(&er->hold_mu);
}

/* One view fewer; the hold is given back by the background thread's next tick, or here when
   there is no thread. */
static void hold_drop(engine_rocksdb_t *er) {
  pthread_mutex_lock(&er->hold_mu);
  er->views_open--;
  if (!er->rw.bg.started) hold_release_if_idle(er);
  pthread_mutex_unlock(&er->hold_mu);
}

static int view_make(engine_rocksdb_t *er, engine_view_t **out, err_t *err) {
  int rc = hold_take(er, err); /* step 1 */
  if (rc != BFH_OK) return rc;
  engine_view_t *v = NULL;
  rc = rdb_wal_refresh(er, err); /* step 2 */
  if (rc == BFH_OK && !(v = stock_view_create(er->rw.sync, er->segs.n)))
    rc = err_set(err, BFH_E_NOMEM, "%s: no memory for a view", er->rw.path);
  if (rc == BFH_OK) {
    stock_view_add_segs(v, &er->segs);
    rc = list_tables(er, &v->tables, &v->ntables, err); /* step 3 */
  }
  if (rc == BFH_OK)
    rc = stock_report_tables(er->rw.sync, er->rw.path, v->tables, NULL, v->ntables, &v->epoch, err);
  if (rc != BFH_OK) {
    stock_view_free(v);
    hold_drop(er);
    return rc;
  }
  *out = v;
  return BFH_OK;
}

int rdb_view_acquire(engine_rocksdb_t *er, engine_view_t **view, err_t *err) {
  pthread_mutex_lock(&er->rw.sync_mu);
  er->syncs++;
  int rc = view_make(er, view, err);
  pthread_mutex_unlock(&er->rw.sync_mu);
  return rc;
}

void rdb_view_release(engine_rocksdb_t *er, engine_view_t *v) {
  if (!v) return;
  if (er->rw.sync && v->epoch) index_sync_view_unpin(er->rw.sync, v->epoch);
  stock_view_free(v);
  hold_drop(er);
}

int rdb_sync(engine_rocksdb_t *er, int aged, err_t *err) {
  if (!er->rw.sync) return BFH_OK;
  engine_table_t *t = NULL;
  size_t n = 0;
  pthread_mutex_lock(&er->rw.sync_mu);
  er->syncs++;
  int rc = list_tables(er, &t, &n, err);
  /* ids 0: the tables of a database this handle holds open are never replaced under it. */
  if (rc == BFH_OK) rc = stock_report_tables(er->rw.sync, er->rw.path, t, NULL, n, NULL, err);
  pthread_mutex_unlock(&er->rw.sync_mu);
  free(t);
  if (rc != BFH_OK) return rc;
  /* A table deleted before index_sync reads it is reported gone by the next list: the read
     says BFH_NOT_FOUND and no leaf is made. */
  return index_sync_run(er->rw.sync, aged ? INDEX_RUN_AGED : INDEX_RUN_ALL, RDB_BG_MIN_AGE_NS, err);
}

/* ---- The background indexer ------------------------------------------------------------ */

static void bg_tick(void *arg) {
  engine_rocksdb_t *er = arg;
  rdb_hold_release_idle(er);
  err_t err;
  rdb_sync(er, 1, &err); /* a failure is seen (and reported) by a search */
}

int rdb_bg_start(engine_rocksdb_t *er, err_t *err) {
  return stock_rw_bg_start(&er->rw, RDB_BG_PERIOD_NS, bg_tick, er, err);
}
