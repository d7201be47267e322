/* The emulated table-build hook of the LevelDB engine (adapter.h, steps 1-3), its views, the
 * background thread, and the table reader index_sync calls for new tables.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bfh.h"
#include "index/index_sync.h"
#include "lsm_hooks/engines/leveldb/adapter.h"
#include "lsm_hooks/engines/leveldb/ldb_api.h"
#include "lsm_hooks/engines/leveldb/filter.h"
#include "lsm_hooks/engines/leveldb/precheck.h"
#include "lsm_hooks/leveldb_format/ldb_sstables.h"

#define PIN_ATTEMPTS 64

/* ---- Views ------------------------------------------------------------------------------ */

void ldb_pin_unref(ldb_pin_t *p) {
  if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
  leveldb_iter_destroy(p->it);
  leveldb_free(p->list);
  free(p);
}

/* The last pin made, if it was made for `list` (fetched after the watch's events up to
   `events` were read): a new reference to it, current again up to those events; else
   NULL. */
static ldb_pin_t *reuse_pin(engine_leveldb_t *el, const char *list, uint64_t events) {
  ldb_pin_t *p = el->pinned;
  if (!p || strcmp(p->list, list) != 0) return NULL;
  p->dir_events = events;
  atomic_fetch_add(&p->refs, 1);
  return p;
}

/* Step 2: the live list with the version holding it pinned. On BFH_OK *pin is a reference
   (ldb_pin_unref) holding the list. The list is fetched, an iterator made (it pins the
   current version) and the list fetched again: equal lists mean the pinned version holds
   every listed file. While the list is the one of the last pin, that pin is shared: its
   version holds the same files.
   While nothing counted in dir_events happened since the last pin was made or renewed (no
   event read from the watch, no listing of the directory, no log found gone: logs.c), that
   pin is shared without asking LevelDB. Then step 1 read every log it knows of, all still
   there, and it knows of every live log that holds an acknowledged entry: such a log's
   creation event was queued before the put returned (before the creating call returned),
   so read before the last listing, which therefore listed it; and a known log is forgotten
   only by a refresh that lists or finds it gone. A log that a listing missed or a refresh
   found gone had its table installed before (LevelDB deletes a log only then), so that
   table is in the list of every pin fetched after that listing or refresh, as the last pin
   was. So every entry is in a log the view read or in a table of the last pin; a version
   installed since can only have moved files between levels or dropped entries no version
   shows any more. A removal's own event proves nothing: the kernel may queue it after the
   name is gone, so the shortcut never waits for it.
   REQUIRES sync_mu, and the logs read (step 1) before it. */
static int pin_list(engine_leveldb_t *el, ldb_pin_t **pin, err_t *err) {
  ldb_dir_events(el);
  if (el->pinned && el->pinned->dir_events == el->dir_events) {
    atomic_fetch_add(&el->pinned->refs, 1);
    *pin = el->pinned;
    return BFH_OK;
  }
  uint64_t events = el->dir_events; /* events read after this make the new pin stale */
  char *a = leveldb_property_value(el->db, "leveldb.sstables");
  if (a && (*pin = reuse_pin(el, a, events))) {
    leveldb_free(a);
    return BFH_OK;
  }
  for (int attempt = 0; a; attempt++) {
    leveldb_iterator_t *it = leveldb_create_iterator(el->db, el->pin_ropt);
    char *b = leveldb_property_value(el->db, "leveldb.sstables");
    if (!b) {
      leveldb_iter_destroy(it);
      break;
    }
    int same = strcmp(a, b) == 0;
    leveldb_free(a);
    a = b;
    if (same || attempt == PIN_ATTEMPTS) {
      /* After PIN_ATTEMPTS changing lists the last one is used unpinned: a file that
         vanishes then is reported by scan_table, never skipped. */
      ldb_pin_t *p = malloc(sizeof *p);
      if (!p) {
        leveldb_iter_destroy(it);
        break;
      }
      atomic_init(&p->refs, 2); /* the caller's and el->pinned's */
      p->it = it;
      p->list = a;
      p->dir_events = events;
      ldb_pin_unref(el->pinned);
      el->pinned = p;
      *pin = p;
      return BFH_OK;
    }
    leveldb_iter_destroy(it);
  }
  leveldb_free(a);
  return err_set(err, BFH_E_IO, "%s: leveldb.sstables is not available", el->rw.path);
}

/* A view of tables t[0, n) (taken: freed with the view) and of the logs' segments read so
   far. REQUIRES sync_mu. */
static engine_view_t *make_view(engine_leveldb_t *el, engine_table_t *t, size_t n) {
  size_t ns = 0;
  for (size_t i = 0; i < el->nlogs; i++) ns += el->logs[i].segs.n;
  engine_view_t *v = stock_view_create(el->rw.sync, ns);
  if (!v) return NULL;
  v->tables = t;
  v->ntables = n;
  stock_tables_sort(v->tables, n);
  ldb_bounds_fill(el, v->tables, n);
  for (size_t i = 0; i < el->nlogs; i++) stock_view_add_segs(v, &el->logs[i].segs);
  return v;
}

void ldb_view_release(engine_leveldb_t *el, engine_view_t *v) {
  if (!v) return;
  if (el->rw.sync && v->epoch) index_sync_view_unpin(el->rw.sync, v->epoch);
  ldb_pin_unref(v->held);
  stock_view_free(v);
}

/* ---- The sync --------------------------------------------------------------------------- */

static int sync_locked(engine_leveldb_t *el, int mode, engine_view_t **view, err_t *err) {
  el->stats.syncs++;
  int rc = BFH_OK;
  if (mode == LDB_SYNC_VIEW) { /* only a view needs the logs' entries */
    rc = ldb_logs_refresh(el, 1, err);
    if (rc != BFH_OK) return rc;
  } else if (el->nlogs > 0) {
    rc = ldb_logs_refresh(el, 0, err); /* frees the segments of deleted logs */
    if (rc != BFH_OK) return rc;
  }
  ldb_pin_t *pin = NULL;
  ldb_sstable_t *t = NULL;
  size_t n = 0;
  rc = pin_list(el, &pin, err);
  if (rc != BFH_OK) return rc;
  rc = ldb_sstables_parse(pin->list, &t, &n, err);
  engine_table_t *tables = NULL;
  if (rc == BFH_OK && !(tables = malloc((n ? n : 1) * sizeof *tables)))
    rc = err_set(err, BFH_E_NOMEM, "%s: no memory", el->rw.path);
  for (size_t i = 0; rc == BFH_OK && i < n; i++)
    tables[i] = (engine_table_t){.number = t[i].number,
                                 .size = t[i].size,
                                 .level = t[i].level,
                                 .max_seq = ENGINE_SEQ_UNKNOWN};
  engine_view_t *v = NULL;
  if (rc == BFH_OK && view) {
    if (!(v = make_view(el, tables, n)))
      rc = err_set(err, BFH_E_NOMEM, "%s: no memory for a view", el->rw.path);
    else
      tables = v->tables; /* the view's now */
  }
  /* ids 0: the tables of the database this engine holds open (with its LOCK) are never
     replaced under it. */
  if (rc == BFH_OK)
    rc = stock_report_tables(el->rw.sync, el->rw.path, tables, NULL, n, v ? &v->epoch : NULL, err);
  if (rc == BFH_OK && v) {
    v->held = pin; /* the view keeps the version pinned */
    pin = NULL;
    *view = v;
    v = NULL;
  } else if (v) {
    tables = NULL; /* freed with v */
  }
  if (!view || rc != BFH_OK) free(tables);
  stock_view_free(v); /* a view not handed out holds no pin yet */
  ldb_pin_unref(pin);
  free(t);
  return rc;
}

int ldb_sync(engine_leveldb_t *el, int mode, engine_view_t **view, err_t *err) {
  pthread_mutex_lock(&el->rw.sync_mu);
  int rc = sync_locked(el, mode, view, err);
  pthread_mutex_unlock(&el->rw.sync_mu);
  if (rc != BFH_OK || !el->rw.sync || mode == LDB_SYNC_VIEW) return rc;
  return index_sync_run(el->rw.sync, mode == LDB_SYNC_FULL ? INDEX_RUN_ALL : INDEX_RUN_AGED,
                        LDB_BG_MIN_AGE_NS, err);
}

/* ---- The background indexer ------------------------------------------------------------ */

static void bg_tick(void *arg) {
  err_t err;
  ldb_sync(arg, LDB_SYNC_BG, NULL, &err); /* a failure is seen (and reported) by a search */
}

int ldb_bg_start(engine_leveldb_t *el, err_t *err) {
  return stock_rw_bg_start(&el->rw, LDB_BG_PERIOD_NS, bg_tick, el, err);
}
