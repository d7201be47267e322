/* The LevelDB engine's part of the emulated table-build hook (adapter.h, steps 1 and 2): the
 * live list with the version holding it pinned; the stock core (stock_rw.h) makes the views
 * and reports the list to index_sync.
 */
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/engines/leveldb/adapter.h"
#include "lsm_hooks/engines/leveldb/ldb_api.h"
#include "lsm_hooks/leveldb_format/ldb_sstables.h"
#include "lsm_hooks/leveldb_format/ldb_version_edit.h"

#define PIN_ATTEMPTS 64

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
      p->serial = ++el->pins_made;
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

/* The LevelDB engine's part of a sync (stock_rw_format_t.list): steps 1 and 2, the live list
   as engine tables (sorted by number; a view's with their sequence bounds). The pin is a
   view's hold. REQUIRES sync_mu. */
int ldb_list(stock_rw_t *s, int view, engine_table_t **out, size_t *count, void **held,
             err_t *err) {
  engine_leveldb_t *el = (engine_leveldb_t *)s;
  /* Only a view needs the logs' entries; another sync frees the segments of deleted logs. */
  int rc = view || el->nlogs > 0 ? ldb_logs_refresh(el, view, err) : BFH_OK;
  ldb_pin_t *pin = NULL;
  if (rc == BFH_OK) rc = pin_list(el, &pin, err);
  if (rc != BFH_OK) return rc;
  ldb_sstable_t *t = NULL;
  size_t n = 0;
  rc = ldb_sstables_parse(pin->list, &t, &n, err);
  engine_table_t *tables = NULL;
  if (rc == BFH_OK && !(tables = malloc((n ? n : 1) * sizeof *tables)))
    rc = err_set(err, BFH_E_NOMEM, "%s: no memory", el->rw.path);
  for (size_t i = 0; rc == BFH_OK && i < n; i++)
    tables[i] = (engine_table_t){.number = t[i].number,
                                 .size = t[i].size,
                                 .level = t[i].level,
                                 .max_seq = ENGINE_SEQ_UNKNOWN};
  free(t);
  if (rc == BFH_OK) {
    stock_tables_sort(tables, n);
    if (view) ldb_bounds_fill(el, tables, n, pin->serial);
    *out = tables;
    *count = n;
  }
  if (rc == BFH_OK && view)
    *held = pin; /* the view keeps the version pinned */
  else
    ldb_pin_unref(pin);
  return rc;
}

void ldb_unhold(stock_rw_t *s, void *held) {
  (void)s;
  ldb_pin_unref(held);
}

const stock_segs_t *ldb_segs(stock_rw_t *s, size_t i) {
  engine_leveldb_t *el = (engine_leveldb_t *)s;
  return i < el->nlogs ? &el->logs[i].segs : NULL;
}

int ldb_list_at_rest(stock_rw_t *s, engine_table_t **out, size_t *count, err_t *err) {
  char *manifest = NULL;
  int rc = stock_current_read(s->io, s->path, &manifest, err);
  if (rc != BFH_OK) return rc;
  ldb_version_t v = {0};
  uint64_t next;
  rc = ldb_version_read(s->io, manifest, 0, &v, &next, err);
  free(manifest);
  engine_table_t *t = NULL;
  if (rc == BFH_OK && !(t = malloc((v.nfiles ? v.nfiles : 1) * sizeof *t)))
    rc = err_set(err, BFH_E_NOMEM, "%s: no memory", s->path);
  for (size_t i = 0; rc == BFH_OK && i < v.nfiles; i++)
    t[i] = (engine_table_t){.number = v.files[i].number,
                            .size = v.files[i].size,
                            .level = v.files[i].level,
                            .max_seq = ENGINE_SEQ_UNKNOWN};
  if (rc == BFH_OK) {
    stock_tables_sort(t, v.nfiles);
    *out = t;
    *count = v.nfiles;
  }
  ldb_version_release(&v);
  return rc;
}
