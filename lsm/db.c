/* lsm_db_t: open/recovery, the write path (group commit), reads, the background thread
 * (memtable flush and compaction), snapshots, iterators and file deletion.
 * doc/lsm.md tells how a put and a get flow and when files are deleted.
 *
 * Locking: db->mu guards the version set, the memtable pointers, the writer queue, the
 * pending outputs and the counters. The head of the writer queue (the leader) appends to
 * the log and inserts into the memtable without the mutex (the memtable has one writer
 * and lock-free readers). The background thread releases the mutex while it builds
 * tables and writes the manifest.
 */
#include "lsm/db.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "filters/blocked_filter.h"
#include "filters/hash.h"
#include "lsm/arena.h"
#include "lsm/compaction.h"
#include "lsm/filename.h"
#include "lsm/internal_key.h"
#include "lsm/level_iter.h"
#include "util/env.h"
#include "lsm/iterator.h"
#include "lsm/log.h"
#include "lsm/mem_filter.h"
#include "lsm/memtable.h"
#include "lsm/table.h"
#include "lsm/table_builder.h"
#include "lsm/block_cache.h"
#include "lsm/table_cache.h"
#include "lsm/user_iter.h"
#include "lsm/version_set.h"
#include "lsm/write_batch.h"
#include "util/path.h"
#include "util/vec.h"

#define L0_SLOWDOWN_FILES 8
#define L0_STOP_FILES 12
#define MAX_GROUP_BYTES (1u << 20)
#define MAX_MEM_COMPACT_LEVEL 2
#define LSM_MAX_KEY_BYTES (1u << 20)
#define LSM_MAX_VALUE_BYTES (1u << 30)

/* What a get reads: the memtables with their key filters and the current version, replaced
   (under mu) whenever one of them changes, so that a get takes one reference instead of
   three. Freed by the last unref (the version unref needs mu). */
typedef struct read_state {
  atomic_int refs;
  memtable_t *mem, *imm;
  mem_filter_t *mf, *imf;
  lsm_version_t *v;
} read_state_t;

typedef struct writer {
  write_batch_t *batch; /* NULL: a forced memtable switch (lsm_flush) */
  int done;
  int status;
  err_t err;
  pthread_cond_t cv;
  struct writer *next;
} writer_t;

struct lsm_db {
  char *dir;
  lsm_options_t opt;
  env_t *io;
  env_lock_t *lock;
  table_cache_t *tc;
  block_cache_t *blocks; /* the gets' block cache (NULL with opt->block_cache_bytes 0) */
  table_builder_options_t topt;

  pthread_mutex_t mu;
  pthread_cond_t bg_cv;   /* wakes the background thread */
  pthread_cond_t done_cv; /* the background thread finished a step */
  lsm_version_set_t *vs;
  memtable_t *mem, *imm;
  mem_filter_t *mf, *imf; /* key filters of mem and imm */
  read_state_t *rs;
  atomic_int has_imm;
  log_writer_t *log;
  uint64_t log_number;
  writer_t *wq_head, *wq_tail;
  write_batch_t group;
  u64vec_t pending; /* table numbers being written (never deleted as obsolete) */

  /* Recovery dropped a damaged tail (manifest or log) that lost nothing committed: the files
     found at open stay on disk for this session, whatever the new state says of them. */
  int damage_seen;
  uint64_t first_own_file; /* the first file number this session allocated */

  int bg_error; /* first background (or log) failure: later writes fail with it */
  err_t bg_err;
  atomic_int shutting_down;
  int bg_busy;
  int compacting; /* a compaction is running: flushes stay in L0 */
  pthread_t bg_thread;
  int bg_started;
  int bg_stopped; /* lsm_stop_background joined it */
  /* The writer's start (log append, manifest record, background thread) is deferred by an
     open that found a clean database, until the first write (start_writer). */
  enum { WRITER_RUNNING, WRITER_PENDING, WRITER_STARTING } writer_state;
  lsm_stats_t stats;
};

void lsm_options_init(lsm_options_t *opt) {
  memset(opt, 0, sizeof *opt);
  opt->create_if_missing = 1;
  opt->memtable_bytes = 4u << 20;
  opt->table_bytes = 2u << 20;
  opt->block_bytes = 4096;
  opt->key_bits_per_key = 10;
  opt->sync = 0;
  opt->level1_bytes = 10u << 20;
  opt->memtable_value_index = 0;
  opt->memtable_value_seed = BFH_DEFAULT_SEED;
  opt->block_cache_bytes = LSM_DEFAULT_BLOCK_CACHE_BYTES;
}

static int set_bg_error(lsm_db_t *db, int rc, const err_t *e) {
  if (!db->bg_error && rc != ST_OK) {
    db->bg_error = rc;
    if (e)
      db->bg_err = *e;
    else
      err_set(&db->bg_err, rc, "background error");
  }
  pthread_cond_broadcast(&db->done_cv);
  return rc;
}

static int report_bg_error(lsm_db_t *db, err_t *err) {
  err_set(err, db->bg_error, "%s", db->bg_err.msg);
  return db->bg_error;
}

/* ---- tables of file metas ------------------------------------------------------------ */

/* The reader of f (borrowed: valid while a version holding f is referenced). */
static int file_table(lsm_db_t *db, lsm_file_meta_t *f, table_t **out, err_t *err) {
  table_t *t = atomic_load_explicit(&f->table, memory_order_acquire);
  if (!t) {
    int rc = table_cache_get(db->tc, f->number, &t, err);
    if (rc != ST_OK) return rc;
    table_t *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&f->table, &expected, t, memory_order_acq_rel,
                                                 memory_order_acquire)) {
      table_unref(t);
      t = expected;
    }
  }
  *out = t;
  return ST_OK;
}

static int env_open_table(void *arg, lsm_file_meta_t *f, struct table **t, err_t *err) {
  return file_table(arg, f, t, err);
}

/* Opens table `number`, just written, through the table cache before it is installed: a table
   that does not read back (its footer, index and meta blocks checked) fails its flush or
   compaction instead of failing the searches and gets that meet it, as LevelDB checks its new
   tables, and the first of those finds it open rather than paying for the open. */
static int open_new_table(lsm_db_t *db, uint64_t number, err_t *err) {
  table_t *t = NULL;
  int rc = table_cache_get(db->tc, number, &t, err);
  if (rc == ST_OK) table_unref(t);
  return rc;
}

/* ---- obsolete files ------------------------------------------------------------------ */

static void pending_remove(lsm_db_t *db, uint64_t number) {
  for (size_t i = 0; i < db->pending.n; i++)
    if (db->pending.v[i] == number) {
      db->pending.v[i] = db->pending.v[--db->pending.n];
      return;
    }
}

static void call_table_removed(lsm_db_t *db, uint64_t number) {
  const lsm_table_hook_t *h = db->opt.hook;
  if (h && h->table_removed) h->table_removed(h->ctx, number);
}

/* Tells the hook that the tables of an installed edit are live. REQUIRES mu. */
static void call_tables_added(lsm_db_t *db, const lsm_version_edit_t *edit) {
  const lsm_table_hook_t *h = db->opt.hook;
  if (!h || !h->table_added) return;
  for (size_t i = 0; i < edit->nadded; i++)
    h->table_added(h->ctx, edit->added[i].meta->number, edit->added[i].meta->size);
}

/* At open: every table of the recovered version is live. REQUIRES mu. */
static void call_tables_live(lsm_db_t *db) {
  const lsm_table_hook_t *h = db->opt.hook;
  if (!h || !h->table_added) return;
  const lsm_version_t *v = db->vs->current;
  for (int level = 0; level < LSM_NUM_LEVELS; level++)
    for (size_t i = 0; i < v->nfiles[level]; i++)
      h->table_added(h->ctx, v->files[level][i]->number, v->files[level][i]->size);
}

/* Deletes every file no live version, pending output or current log needs. REQUIRES mu
   (released during the unlinks); called only by the background thread, open and close.
   at_open: orphan tables (written but never installed before a crash) are reported to
   the hook as removed. */
static void delete_obsolete_files(lsm_db_t *db, int at_open) {
  if (db->bg_error) return; /* after an error the state on disk is not trusted */
  db->vs->obsolete.n = 0;
  u64vec_t live;
  u64vec_init(&live);
  if (lsm_version_set_live_files(db->vs, &live) != ST_OK) return;
  for (size_t i = 0; i < db->pending.n; i++)
    if (u64vec_push(&live, db->pending.v[i])) {
      u64vec_release(&live);
      return;
    }
  u64vec_sort(&live);
  char **names = NULL;
  size_t n = 0;
  if (env_list_dir(db->io, db->dir, &names, &n, NULL) != ST_OK) {
    u64vec_release(&live);
    return;
  }
  uint64_t log_number = db->vs->log_number, manifest_number = db->vs->manifest_number;
  uint64_t cur_log = db->log_number;
  pthread_mutex_unlock(&db->mu);
  for (size_t i = 0; i < n; i++) {
    uint64_t number;
    lsm_file_type_t type;
    if (!lsm_filename_parse(names[i], &number, &type)) continue;
    if (db->damage_seen && number < db->first_own_file) continue;
    int keep = 1;
    switch (type) {
      case LSM_FILE_LOG:
        keep = number >= log_number || number == cur_log;
        break;
      case LSM_FILE_MANIFEST:
        keep = number >= manifest_number;
        break;
      case LSM_FILE_TABLE:
        keep = u64_sorted_contains(live.v, live.n, number);
        break;
      case LSM_FILE_TEMP:
        keep = !at_open;
        break;
      default:
        keep = 1;
    }
    if (keep) continue;
    char *path = path_join(db->dir, names[i]);
    if (!path) continue; /* no memory: an orphan left for the next pass */
    if (type == LSM_FILE_TABLE) table_cache_evict(db->tc, number);
    (void)env_unlink(db->io, path, NULL);
    free(path);
    if (type == LSM_FILE_TABLE && at_open) call_table_removed(db, number);
  }
  pthread_mutex_lock(&db->mu);
  env_names_free(names, n);
  u64vec_release(&live);
}

/* ---- read state ---------------------------------------------------------------------- */

/* REQUIRES mu. */
static void read_state_free(read_state_t *rs) {
  memtable_unref(rs->mem);
  memtable_unref(rs->imm);
  mem_filter_unref(rs->mf);
  mem_filter_unref(rs->imf);
  lsm_version_unref(rs->v);
  free(rs);
}

/* Drops a reference taken by a reader (without mu). */
static void read_state_unref(lsm_db_t *db, read_state_t *rs) {
  if (atomic_fetch_sub_explicit(&rs->refs, 1, memory_order_acq_rel) != 1) return;
  pthread_mutex_lock(&db->mu);
  read_state_free(rs);
  if (db->vs->obsolete.n) pthread_cond_signal(&db->bg_cv);
  pthread_mutex_unlock(&db->mu);
}

/* Publishes the current memtables and version to readers. REQUIRES mu. On no memory
   db->rs becomes NULL and gets take the slower path (view_acquire). */
static void refresh_read_state(lsm_db_t *db) {
  read_state_t *rs = malloc(sizeof *rs);
  read_state_t *old = db->rs;
  db->rs = rs;
  if (old && atomic_fetch_sub_explicit(&old->refs, 1, memory_order_acq_rel) == 1)
    read_state_free(old);
  if (!rs) return; /* readers then take the slow path (view_acquire) */
  atomic_init(&rs->refs, 1);
  rs->mem = db->mem;
  memtable_ref(rs->mem);
  rs->imm = db->imm;
  if (rs->imm) memtable_ref(rs->imm);
  rs->mf = db->mf;
  if (rs->mf) mem_filter_ref(rs->mf);
  rs->imf = db->imf;
  if (rs->imf) mem_filter_ref(rs->imf);
  rs->v = db->vs->current;
  lsm_version_ref(rs->v);
}

/* A memtable for writes and reads, with the value index if the options ask for it. One
   bucket per 64 bytes of budget: the smallest entries take about 64 arena bytes (link, node
   and one next pointer, a short key and value), so a full memtable's chains hold about one
   entry each and a search compares about one value besides its matches; the array then
   costs 8 bytes per 64 (memtable_bytes / 8, up to / 4 after rounding to a power of two).
   At least 1024 buckets, so that a tiny memtable does not chain everything. */
static memtable_t *new_memtable(const lsm_db_t *db) {
  if (!db->opt.memtable_value_index) return memtable_create();
  size_t buckets = db->opt.memtable_bytes / 64;
  return memtable_create_indexed_terms(buckets < 1024 ? 1024 : buckets, db->opt.memtable_value_seed,
                                       db->opt.memtable_value_terms);
}

static mem_filter_t *new_mem_filter(const lsm_db_t *db) {
  return mem_filter_create(db->opt.memtable_bytes / 4); /* ~15 bits per 60-byte entry */
}

static int add_key_hash(void *arg, uint64_t seq, int type, const void *key, size_t klen,
                        const void *val, size_t vlen) {
  (void)seq, (void)type, (void)val, (void)vlen;
  mem_filter_add(arg, blocked_filter_key_hash(key, klen));
  return 0;
}

/* ---- flush: memtable -> table -------------------------------------------------------- */

static uint64_t new_pending_file(lsm_db_t *db) {
  uint64_t number = lsm_version_set_new_file_number(db->vs);
  (void)u64vec_push(&db->pending, number); /* on no memory: only open/bg delete, safe */
  return number;
}

/* The level a flushed table [lo, hi] may go to directly (LevelDB's rule: as deep as level
   2 while it overlaps nothing on the way and not too much of the level after). */
static int pick_level_for_flush(lsm_db_t *db, const lsm_version_t *v, const uint8_t *lo,
                                size_t lo_len, const uint8_t *hi, size_t hi_len) {
  int level = 0;
  if (db->compacting || lsm_version_overlaps(v, 0, lo, lo_len, hi, hi_len)) return 0;
  while (level < MAX_MEM_COMPACT_LEVEL) {
    if (lsm_version_overlaps(v, level + 1, lo, lo_len, hi, hi_len)) break;
    if (level + 2 < LSM_NUM_LEVELS) {
      lsm_file_meta_t **g;
      size_t ng;
      if (lsm_version_overlapping_files(v, level + 2, lo, lo_len, hi, hi_len, &g, &ng)) break;
      uint64_t bytes = 0;
      for (size_t i = 0; i < ng; i++) bytes += g[i]->size;
      free(g);
      if (bytes > 10 * (uint64_t)db->opt.table_bytes) break;
    }
    level++;
  }
  return level;
}

/* Writes m as one table and adds it to edit (nothing if m is empty). REQUIRES mu (released
   while the table is built). *number gets the table's number (0 if none); it stays in
   pending until the caller installs the edit and removes it. */
static int write_level0(lsm_db_t *db, memtable_t *m, lsm_version_edit_t *edit, int may_push,
                        uint64_t *number_out, err_t *err) {
  *number_out = 0;
  if (memtable_entries(m) == 0) return ST_OK;
  uint64_t number = new_pending_file(db);
  lsm_version_t *base = db->vs->current;
  lsm_version_ref(base);
  pthread_mutex_unlock(&db->mu);

  char *path = table_file_path(db->dir, number);
  table_builder_t *tb = NULL;
  iterator_t *it = memtable_iterator_create(m);
  int rc = it && path ? table_builder_create(db->io, path, number, &db->topt, &tb, err)
                      : err_set(err, ST_E_NOMEM, "flush: out of memory");
  uint8_t *prev = NULL;
  size_t prev_len = 0, prev_cap = 0;
  int has_prev = 0;
  if (rc == ST_OK) {
    for (iterator_seek_first(it); iterator_valid(it); iterator_next(it)) {
      size_t klen, vlen;
      const uint8_t *key = iterator_key(it, &klen);
      const void *val = iterator_value(it, &vlen);
      size_t ulen = klen - INTERNAL_KEY_TAG_BYTES;
      /* Only the newest entry of a key matters to any reader of the table. */
      if (has_prev && bytewise_compare(key, ulen, prev, prev_len) == 0) continue;
      if (ulen > prev_cap) {
        uint8_t *p = realloc(prev, ulen * 2 + 16);
        if (!p) {
          rc = err_set(err, ST_E_NOMEM, "flush: out of memory");
          break;
        }
        prev = p;
        prev_cap = ulen * 2 + 16;
      }
      memcpy(prev, key, ulen);
      prev_len = ulen;
      has_prev = 1;
      rc = table_builder_add(tb, key, klen, val, vlen, err);
      if (rc != ST_OK) break;
    }
  }
  if (rc == ST_OK) rc = iterator_status(it, err);
  if (rc == ST_OK) rc = table_builder_finish(tb, err);
  uint64_t size = 0, max_seq = LSM_SEQ_UNKNOWN;
  uint8_t *smallest = NULL, *largest = NULL;
  size_t slen = 0, llen = 0;
  if (rc == ST_OK) {
    size = table_builder_file_size(tb);
    max_seq = table_builder_max_seq(tb);
    const uint8_t *s = table_builder_smallest(tb, &slen), *l = table_builder_largest(tb, &llen);
    smallest = malloc(slen);
    largest = malloc(llen);
    if (smallest && largest) {
      memcpy(smallest, s, slen);
      memcpy(largest, l, llen);
    } else {
      rc = err_set(err, ST_E_NOMEM, "flush: out of memory");
    }
    if (rc == ST_OK) rc = open_new_table(db, number, err);
    if (rc != ST_OK) call_table_removed(db, number); /* end(ok = 1) was called */
  }
  table_builder_destroy(tb);
  iterator_destroy(it);
  free(prev);
  if (rc != ST_OK && path) (void)env_unlink(db->io, path, NULL);

  pthread_mutex_lock(&db->mu);
  if (rc == ST_OK) {
    int level =
        may_push ? pick_level_for_flush(db, base, smallest, slen - 8, largest, llen - 8) : 0;
    if (lsm_version_edit_add_table(edit, level, number, size, smallest, slen, largest, llen,
                                   max_seq)) {
      rc = err_set(err, ST_E_NOMEM, "flush: out of memory");
      call_table_removed(db, number);
      (void)env_unlink(db->io, path, NULL);
    } else {
      db->stats.bytes_written += size;
      *number_out = number;
    }
  }
  if (rc != ST_OK) pending_remove(db, number);
  free(path);
  free(smallest);
  free(largest);
  lsm_version_unref(base);
  return rc;
}

/* Flushes db->imm and installs the table. REQUIRES mu. */
static int flush_imm(lsm_db_t *db) {
  err_t e;
  err_clear(&e);
  memtable_t *imm = db->imm;
  uint64_t log_number = db->log_number; /* imm's data lives in older logs only */
  lsm_version_edit_t edit;
  lsm_version_edit_init(&edit);
  uint64_t number = 0;
  int rc = write_level0(db, imm, &edit, !db->compacting, &number, &e);
  if (rc == ST_OK) {
    lsm_version_edit_set_log_number(&edit, log_number);
    rc = lsm_version_set_log_and_apply(db->vs, &edit, &db->mu, &e);
    if (rc == ST_OK) call_tables_added(db, &edit);
    if (rc != ST_OK && number) {
      /* The table stays on disk: the edit naming it may have reached the manifest (a write
         or sync that failed after its bytes did), and then the next open needs it; if not,
         that open deletes it as an orphan. */
      pthread_mutex_unlock(&db->mu);
      call_table_removed(db, number);
      pthread_mutex_lock(&db->mu);
    }
  }
  if (number) pending_remove(db, number);
  lsm_version_edit_release(&edit);
  if (rc != ST_OK) {
    err_prefix(&e, "flush: ");
    return set_bg_error(db, rc, &e);
  }
  db->imm = NULL;
  atomic_store(&db->has_imm, 0);
  memtable_unref(imm);
  mem_filter_unref(db->imf);
  db->imf = NULL;
  refresh_read_state(db);
  db->stats.flushes++;
  pthread_cond_broadcast(&db->done_cv);
  return ST_OK;
}

/* ---- compaction ---------------------------------------------------------------------- */

static uint64_t env_new_file(void *arg) {
  lsm_db_t *db = arg;
  pthread_mutex_lock(&db->mu);
  uint64_t n = new_pending_file(db);
  pthread_mutex_unlock(&db->mu);
  return n;
}

/* Between compaction entries: stop on close; flush a waiting memtable first. */
static int env_interrupt(void *arg) {
  lsm_db_t *db = arg;
  if (atomic_load_explicit(&db->shutting_down, memory_order_acquire)) return 1;
  if (atomic_load_explicit(&db->has_imm, memory_order_acquire)) {
    pthread_mutex_lock(&db->mu);
    if (db->imm && !db->bg_error) (void)flush_imm(db);
    pthread_mutex_unlock(&db->mu);
  }
  return 0;
}

/* Runs one compaction if the current version needs one. REQUIRES mu. */
static void background_compaction(lsm_db_t *db) {
  lsm_compaction_t *c = lsm_compaction_pick(db->vs, db->opt.table_bytes);
  if (!c) {
    if (db->vs->current->score >= 1)
      set_bg_error(db, err_set(&db->bg_err, ST_E_NOMEM, "compaction: out of memory"), NULL);
    return;
  }
  err_t e;
  err_clear(&e);
  lsm_version_edit_t edit;
  lsm_version_edit_init(&edit);
  int rc;
  if (lsm_compaction_is_trivial_move(c)) {
    const lsm_file_meta_t *f = c->inputs[0][0];
    rc = lsm_version_edit_delete_file(&edit, c->level, f->number);
    if (rc == ST_OK)
      rc = lsm_version_edit_add_table(&edit, c->level + 1, f->number, f->size, f->smallest,
                                      f->smallest_len, f->largest, f->largest_len, f->max_seq);
    if (rc != ST_OK) rc = err_set(&e, rc, "compaction: out of memory");
    if (rc == ST_OK) rc = lsm_version_set_log_and_apply(db->vs, &edit, &db->mu, &e);
    if (rc == ST_OK) refresh_read_state(db);
    if (rc != ST_OK) set_bg_error(db, rc, &e);
    lsm_version_edit_release(&edit);
    lsm_compaction_destroy(c);
    return;
  }
  lsm_compaction_env_t env = {.io = db->io,
                              .dir = db->dir,
                              .topt = db->topt,
                              .new_file = env_new_file,
                              .interrupt = env_interrupt,
                              .open_table = env_open_table,
                              .arg = db};
  db->compacting = 1;
  pthread_mutex_unlock(&db->mu);
  rc = lsm_compaction_run(c, &env, &e);
  for (size_t i = 0; rc == ST_OK && i < c->noutputs; i++)
    rc = open_new_table(db, c->outputs[i].number, &e);
  pthread_mutex_lock(&db->mu);
  db->compacting = 0;
  if (rc == ST_OK) {
    rc = lsm_compaction_fill_edit(c, &edit);
    if (rc != ST_OK) rc = err_set(&e, rc, "compaction: out of memory");
  }
  int logged = 0; /* the manifest write was tried: its edit may be on disk */
  if (rc == ST_OK) {
    logged = 1;
    rc = lsm_version_set_log_and_apply(db->vs, &edit, &db->mu, &e);
    if (rc == ST_OK) call_tables_added(db, &edit);
  }
  for (size_t i = 0; i < c->noutputs; i++) pending_remove(db, c->outputs[i].number);
  if (rc == ST_OK) {
    refresh_read_state(db);
    db->stats.compactions++;
    db->stats.bytes_written += c->bytes_written;
  }
  pthread_mutex_unlock(&db->mu);
  if (rc == ST_OK) {
    /* The inputs left the live version. */
    for (int w = 0; w < 2; w++)
      for (size_t i = 0; i < c->ninputs[w]; i++) call_table_removed(db, c->inputs[w][i]->number);
  } else {
    /* Outputs written but never installed. After a failed manifest write they stay on
       disk (the next open needs them if the edit reached the manifest, else deletes them
       as orphans). */
    for (size_t i = 0; i < c->noutputs; i++) {
      call_table_removed(db, c->outputs[i].number);
      table_cache_evict(db->tc, c->outputs[i].number); /* opened by open_new_table */
      if (logged) continue;
      char *path = table_file_path(db->dir, c->outputs[i].number);
      if (path) (void)env_unlink(db->io, path, NULL); /* else an orphan the next open deletes */
      free(path);
    }
  }
  pthread_mutex_lock(&db->mu);
  if (rc != ST_OK && !atomic_load(&db->shutting_down)) set_bg_error(db, rc, &e);
  lsm_version_edit_release(&edit);
  lsm_compaction_destroy(c);
}

static int bg_work_needed(lsm_db_t *db) {
  if (db->bg_error) return 0;
  return db->imm != NULL || db->vs->current->score >= 1 || db->vs->obsolete.n > 0;
}

static void *bg_main(void *arg) {
  lsm_db_t *db = arg;
  pthread_mutex_lock(&db->mu);
  for (;;) {
    while (!atomic_load(&db->shutting_down) && !bg_work_needed(db))
      pthread_cond_wait(&db->bg_cv, &db->mu);
    if (atomic_load(&db->shutting_down)) break;
    db->bg_busy = 1;
    if (db->imm)
      (void)flush_imm(db);
    else if (db->vs->current->score >= 1)
      background_compaction(db);
    delete_obsolete_files(db, 0);
    const lsm_table_hook_t *h = db->opt.hook;
    if (h && h->changed) {
      pthread_mutex_unlock(&db->mu);
      h->changed(h->ctx);
      pthread_mutex_lock(&db->mu);
    }
    db->bg_busy = 0;
    pthread_cond_broadcast(&db->done_cv);
  }
  db->bg_busy = 0;
  pthread_cond_broadcast(&db->done_cv);
  pthread_mutex_unlock(&db->mu);
  return NULL;
}

/* ---- write path ---------------------------------------------------------------------- */

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Starts a new log and memtable; the old memtable becomes immutable. REQUIRES mu, the
   caller is the writer at the head of the queue, db->imm == NULL. */
static int switch_memtable(lsm_db_t *db, err_t *err) {
  uint64_t number = lsm_version_set_new_file_number(db->vs);
  char *path = lsm_filename_log(db->dir, number);
  if (!path)
    return err_set(err, ST_E_NOMEM, "memtable: no memory for the path of log %06llu",
                   (unsigned long long)number);
  log_writer_t *lw = NULL;
  int rc = log_writer_open(db->io, path, &lw, err);
  if (rc == ST_OK && db->opt.sync) rc = env_sync_dir(db->io, db->dir, err);
  memtable_t *m = rc == ST_OK ? new_memtable(db) : NULL;
  mem_filter_t *mf = rc == ST_OK ? new_mem_filter(db) : NULL;
  if (rc == ST_OK && (!m || !mf)) rc = err_set(err, ST_E_NOMEM, "memtable: out of memory");
  if (rc != ST_OK) {
    memtable_unref(m);
    mem_filter_unref(mf);
    (void)log_writer_close(lw, NULL);
    (void)env_unlink(db->io, path, NULL);
    free(path);
    return rc;
  }
  free(path);
  (void)log_writer_close(db->log, NULL);
  db->log = lw;
  db->log_number = number;
  db->imm = db->mem;
  db->imf = db->mf;
  atomic_store(&db->has_imm, 1);
  db->mem = m;
  db->mf = mf;
  refresh_read_state(db);
  pthread_cond_signal(&db->bg_cv);
  return ST_OK;
}

/* A memtable is full when its entries take more than memtable_bytes of its arena. What the
   arena's blocks hold is not the measure: a block is 64 KiB, so a memtable_bytes below
   that would be full at its first entry (one table per put). The value index does not count
   either (its bucket array, allocated whole at creation, and its links, one per item of a
   value): a memtable with it flushes the same tables as one without. Counted, the links (16
   bytes an item: 128 for a value with a range attribute's 8 items, beside about 80 for the
   entry of a 16-byte key and value) would fill it at about two fifths of its entries.
   REQUIRES: the writer (make_room_for_write under mu, or the replay). */
static int memtable_full(const lsm_db_t *db, const memtable_t *m) {
  return memtable_entry_bytes(m) > db->opt.memtable_bytes;
}

/* Makes sure the memtable has room (force: switch it if it holds anything). REQUIRES mu;
   may wait for the background thread. */
static int make_room_for_write(lsm_db_t *db, int force, err_t *err) {
  int allow_delay = !force;
  uint64_t t0 = 0;
  for (;;) {
    if (db->bg_error) return report_bg_error(db, err);
    size_t l0 = db->vs->current->nfiles[0];
    if (allow_delay && l0 >= L0_SLOWDOWN_FILES) {
      /* Slow each write down by 1 ms rather than stop one write for seconds. */
      pthread_mutex_unlock(&db->mu);
      uint64_t t = now_us();
      usleep(1000);
      pthread_mutex_lock(&db->mu);
      db->stats.stall_us += now_us() - t;
      allow_delay = 0;
    } else if (memtable_entries(db->mem) == 0 || (!force && !memtable_full(db, db->mem))) {
      break; /* (an empty memtable is never switched: its arena may already exceed a tiny
                memtable_bytes) */
    } else if (db->imm || l0 >= L0_STOP_FILES) {
      if (!t0) t0 = now_us();
      pthread_cond_signal(&db->bg_cv);
      pthread_cond_wait(&db->done_cv, &db->mu);
    } else {
      int rc = switch_memtable(db, err);
      if (rc != ST_OK) return rc;
      force = 0;
    }
  }
  if (t0) db->stats.stall_us += now_us() - t0;
  return ST_OK;
}

/* Joins the batches of the writers queued after the leader (same sync setting for all:
   it is a db option). Sets *last to the last writer in the group. REQUIRES mu. */
static write_batch_t *build_group(lsm_db_t *db, writer_t **last) {
  writer_t *first = db->wq_head;
  write_batch_t *result = first->batch;
  size_t size = result->size;
  size_t max = size <= (128u << 10) ? size + (128u << 10) : MAX_GROUP_BYTES;
  *last = first;
  for (writer_t *w = first->next; w; w = w->next) {
    if (!w->batch) break; /* a forced switch goes alone */
    if (size + w->batch->size > max) break;
    if (result == first->batch) {
      write_batch_clear(&db->group);
      if (write_batch_append(&db->group, first->batch) != ST_OK) break;
      result = &db->group;
    }
    if (write_batch_append(result, w->batch) != ST_OK) break;
    size += w->batch->size;
    *last = w;
  }
  return result;
}

static int start_writer(lsm_db_t *db, err_t *err);

static int db_write(lsm_db_t *db, write_batch_t *batch, err_t *err) {
  writer_t w = {.batch = batch};
  pthread_cond_init(&w.cv, NULL);
  err_clear(&w.err);
  pthread_mutex_lock(&db->mu);
  if (db->wq_tail)
    db->wq_tail->next = &w;
  else
    db->wq_head = &w;
  db->wq_tail = &w;
  while (!w.done && db->wq_head != &w) pthread_cond_wait(&w.cv, &db->mu);
  if (w.done) {
    pthread_mutex_unlock(&db->mu);
    pthread_cond_destroy(&w.cv);
    if (w.status != ST_OK) err_set(err, w.status, "%s", w.err.msg);
    return w.status;
  }
  int rc = start_writer(db, &w.err);
  if (rc == ST_OK) rc = make_room_for_write(db, batch == NULL, &w.err);
  writer_t *last = &w;
  if (rc == ST_OK && batch) {
    write_batch_t *group = build_group(db, &last);
    uint64_t seq = db->vs->last_sequence + 1;
    write_batch_set_seq(group, seq);
    uint32_t count = write_batch_count(group);
    log_writer_t *log = db->log;
    memtable_t *mem = db->mem;
    mem_filter_t *mf = db->mf;
    pthread_mutex_unlock(&db->mu);
    size_t n;
    const uint8_t *data = write_batch_data(group, &n);
    rc = log_writer_add(log, data, n, db->opt.sync, &w.err);
    int logged = rc == ST_OK;
    if (rc == ST_OK) rc = write_batch_insert(data, n, mem, &w.err);
    if (rc == ST_OK) (void)write_batch_iterate(data, n, add_key_hash, mf, NULL);
    pthread_mutex_lock(&db->mu);
    if (rc == ST_OK) {
      db->vs->last_sequence = seq + count - 1;
      db->stats.bytes_written += n;
    } else {
      /* The log (or memtable) may now hold part of this group: refuse further writes. */
      err_prefix(&w.err, logged ? "memtable: " : "log: ");
      set_bg_error(db, rc, &w.err);
    }
    if (group == &db->group) write_batch_clear(&db->group);
  }
  for (;;) {
    writer_t *r = db->wq_head;
    db->wq_head = r->next;
    if (r != &w) {
      r->status = rc;
      if (rc != ST_OK) r->err = w.err;
      r->done = 1;
      pthread_cond_signal(&r->cv);
    }
    if (r == last) break;
  }
  if (db->wq_head)
    pthread_cond_signal(&db->wq_head->cv);
  else
    db->wq_tail = NULL;
  pthread_mutex_unlock(&db->mu);
  pthread_cond_destroy(&w.cv);
  if (rc != ST_OK) err_set(err, rc, "%s", w.err.msg);
  return rc;
}

static int check_key(const void *key, size_t klen, err_t *err) {
  if (!key || klen == 0) return err_set(err, ST_E_INVALID, "empty or NULL key");
  if (klen > LSM_MAX_KEY_BYTES)
    return err_set(err, ST_E_INVALID, "key of %zu bytes is longer than the limit (%u)", klen,
                   LSM_MAX_KEY_BYTES);
  return ST_OK;
}

int lsm_put(lsm_db_t *db, const void *key, size_t key_len, const void *val, size_t val_len,
            err_t *err) {
  int rc = check_key(key, key_len, err);
  if (rc != ST_OK) return rc;
  if (!val && val_len) return err_set(err, ST_E_INVALID, "NULL value with non-zero length");
  if (val_len > LSM_MAX_VALUE_BYTES)
    return err_set(err, ST_E_INVALID, "value of %zu bytes is longer than the limit (%u)", val_len,
                   LSM_MAX_VALUE_BYTES);
  write_batch_t b;
  write_batch_init(&b);
  if (write_batch_put(&b, key, key_len, val_len ? val : "", val_len) != ST_OK) {
    write_batch_release(&b);
    return err_set(err, ST_E_NOMEM, "put: out of memory");
  }
  rc = db_write(db, &b, err);
  write_batch_release(&b);
  return rc;
}

int lsm_delete(lsm_db_t *db, const void *key, size_t key_len, err_t *err) {
  int rc = check_key(key, key_len, err);
  if (rc != ST_OK) return rc;
  write_batch_t b;
  write_batch_init(&b);
  if (write_batch_delete(&b, key, key_len) != ST_OK) {
    write_batch_release(&b);
    return err_set(err, ST_E_NOMEM, "delete: out of memory");
  }
  rc = db_write(db, &b, err);
  write_batch_release(&b);
  return rc;
}

/* Starts the writer of an open that deferred it (lsm_open: a clean database): appends to
   the log the open replayed, records its number in a new manifest (as every read-write
   open did), deletes what the open would have deleted and starts the background thread.
   Called by the first write, or by lsm_wait_idle when background work is due. REQUIRES mu
   (released while the manifest is written; a second caller waits for the first). On failure
   nothing was committed and the next write tries again. */
static int start_writer(lsm_db_t *db, err_t *err) {
  while (db->writer_state == WRITER_STARTING) pthread_cond_wait(&db->done_cv, &db->mu);
  if (db->writer_state == WRITER_RUNNING) return ST_OK;
  db->writer_state = WRITER_STARTING;
  char *path = lsm_filename_log(db->dir, db->log_number);
  int rc = path ? log_writer_open_append(db->io, path, &db->log, err)
                : err_set(err, ST_E_NOMEM, "no memory for the path of log %06llu",
                          (unsigned long long)db->log_number);
  free(path);
  if (rc == ST_OK) {
    lsm_version_edit_t edit;
    lsm_version_edit_init(&edit);
    lsm_version_edit_set_log_number(&edit, db->log_number);
    rc = lsm_version_set_log_and_apply(db->vs, &edit, &db->mu, err);
    lsm_version_edit_release(&edit);
  }
  if (rc != ST_OK) {
    (void)log_writer_close(db->log, NULL);
    db->log = NULL;
    db->writer_state = WRITER_PENDING;
    pthread_cond_broadcast(&db->done_cv);
    return rc;
  }
  refresh_read_state(db);
  delete_obsolete_files(db, 1);
  if (pthread_create(&db->bg_thread, NULL, bg_main, db) != 0)
    rc = set_bg_error(db, err_set(err, ST_E_NOMEM, "cannot start the background thread"), err);
  else
    db->bg_started = 1;
  db->writer_state = WRITER_RUNNING;
  pthread_cond_broadcast(&db->done_cv);
  pthread_cond_signal(&db->bg_cv); /* recovery may have left a compaction due */
  return rc;
}

int lsm_flush(lsm_db_t *db, err_t *err) {
  int rc = db_write(db, NULL, err);
  if (rc != ST_OK) return rc;
  pthread_mutex_lock(&db->mu);
  while (db->imm && !db->bg_error) pthread_cond_wait(&db->done_cv, &db->mu);
  rc = db->bg_error ? report_bg_error(db, err) : ST_OK;
  pthread_mutex_unlock(&db->mu);
  return rc;
}

int lsm_wait_idle(lsm_db_t *db, err_t *err) {
  pthread_mutex_lock(&db->mu);
  if (db->writer_state != WRITER_RUNNING &&
      (db->vs->current->score >= 1 || db->vs->obsolete.n > 0)) {
    int rc = start_writer(db, err);
    if (rc != ST_OK) {
      pthread_mutex_unlock(&db->mu);
      return rc;
    }
  }
  while (!db->bg_error &&
         (db->imm || db->bg_busy || db->vs->current->score >= 1 || db->vs->obsolete.n > 0)) {
    pthread_cond_signal(&db->bg_cv);
    pthread_cond_wait(&db->done_cv, &db->mu);
  }
  int rc = db->bg_error ? report_bg_error(db, err) : ST_OK;
  pthread_mutex_unlock(&db->mu);
  return rc;
}

/* ---- reads --------------------------------------------------------------------------- */

/* A consistent read view: memtables, version and the sequence bound. */
typedef struct view {
  memtable_t *mem, *imm;
  lsm_version_t *v;
  uint64_t seq;
} view_t;

static void view_acquire(lsm_db_t *db, view_t *vw) {
  pthread_mutex_lock(&db->mu);
  vw->mem = db->mem;
  memtable_ref(vw->mem);
  vw->imm = db->imm;
  if (vw->imm) memtable_ref(vw->imm);
  vw->v = db->vs->current;
  lsm_version_ref(vw->v);
  vw->seq = db->vs->last_sequence;
  pthread_mutex_unlock(&db->mu);
}

static void view_release(lsm_db_t *db, view_t *vw) {
  memtable_unref(vw->mem);
  memtable_unref(vw->imm);
  pthread_mutex_lock(&db->mu);
  lsm_version_unref(vw->v);
  if (db->vs->obsolete.n) pthread_cond_signal(&db->bg_cv);
  pthread_mutex_unlock(&db->mu);
}

static int in_range(const lsm_file_meta_t *f, const void *key, size_t klen) {
  return bytewise_compare(key, klen, f->smallest, f->smallest_len - 8) >= 0 &&
         bytewise_compare(key, klen, f->largest, f->largest_len - 8) <= 0;
}

/* The key filter line of f's table that a lookup of hash probes, asked for ahead (a table
   not opened yet is skipped: the hint opens nothing). */
static void prefetch_filter(lsm_file_meta_t *f, uint64_t hash) {
  table_t *t = atomic_load_explicit(&f->table, memory_order_acquire);
  if (t) table_key_prefetch(t, hash);
}

/* The tables a lookup of key in v probes, in order: every L0 table whose range holds the key,
   newest first, then the one table of each deeper level whose range does. */
typedef struct probe_order {
  lsm_version_t *v;
  const void *key;
  size_t klen;
  size_t at[LSM_NUM_LEVELS]; /* level >= 1: the index of its table, or nfiles if none */
  int level;
  size_t j; /* level 0: the tables looked at so far */
} probe_order_t;

/* Starts o for key, whose hash is blocked_filter_key_hash(key): the key filters' lines of
   every table o will give are asked for together (each probe is a miss of its own, and the
   lookup would take them one after another). */
static void probe_order_init(probe_order_t *o, lsm_version_t *v, const void *key, size_t klen,
                             uint64_t hash) {
  o->v = v;
  o->key = key;
  o->klen = klen;
  o->level = 0;
  o->j = 0;
  for (int level = 0; level < LSM_NUM_LEVELS; level++) {
    size_t n = v->nfiles[level];
    lsm_file_meta_t *const *files = v->files[level];
    o->at[level] = n;
    if (n == 0) continue;
    if (level == 0) {
      for (size_t j = 0; j < n; j++)
        if (in_range(files[j], key, klen)) prefetch_filter(files[j], hash);
      continue;
    }
    size_t i = lsm_version_find_file(v, level, key, klen);
    if (i < n && bytewise_compare(key, klen, files[i]->smallest, files[i]->smallest_len - 8) >= 0) {
      o->at[level] = i;
      prefetch_filter(files[i], hash);
    }
  }
}

/* The next table to probe, or NULL after the last. */
static lsm_file_meta_t *probe_order_next(probe_order_t *o) {
  lsm_version_t *v = o->v;
  for (; o->level < LSM_NUM_LEVELS; o->level++, o->j = 0) {
    size_t n = v->nfiles[o->level];
    lsm_file_meta_t *const *files = v->files[o->level];
    if (o->level > 0) {
      if (o->j++ == 0 && o->at[o->level] < n) return files[o->at[o->level]];
      continue;
    }
    while (o->j < n) {
      lsm_file_meta_t *f = files[n - 1 - o->j++];
      if (in_range(f, o->key, o->klen)) return f;
    }
  }
  return NULL;
}

/* Looks key up in the tables of v, in probe_order. hash is blocked_filter_key_hash(key),
   computed once for every filter probed. */
static int version_get(lsm_db_t *db, lsm_version_t *v, const void *key, size_t klen, uint64_t hash,
                       uint64_t seq, block_memo_t *memo, void **val, size_t *val_len, err_t *err) {
  lsm_lookup_t lk;
  uint8_t stack[8192]; /* a data block of the default 4 KiB, and more */
  table_buf_t buf;
  table_buf_init(&buf, stack, sizeof stack);
  int rc = ST_NOT_FOUND;
  probe_order_t o;
  probe_order_init(&o, v, key, klen, hash);
  lsm_file_meta_t *f;
  while ((f = probe_order_next(&o))) {
    table_t *t;
    rc = file_table(db, f, &t, err);
    if (rc == ST_OK) rc = table_get_kept(t, key, klen, hash, seq, memo, &buf, &lk, err);
    if (rc != ST_OK || lk.state == LSM_LOOKUP_DELETED) break;
    if (lk.state == LSM_LOOKUP_VALUE) {
      void *p = malloc(lk.val_len ? lk.val_len : 1);
      if (!p) {
        rc = err_set(err, ST_E_NOMEM, "get: out of memory");
      } else {
        if (lk.val_len) memcpy(p, lk.val, lk.val_len);
        *val = p;
        *val_len = lk.val_len;
      }
      break;
    }
    rc = ST_NOT_FOUND;
  }
  table_buf_release(&buf);
  return rc == ST_OK && lk.state == LSM_LOOKUP_DELETED ? ST_NOT_FOUND : rc;
}

static int mem_get(memtable_t *m, const void *key, size_t klen, uint64_t seq, void **val,
                   size_t *val_len, err_t *err) {
  lsm_lookup_t lk;
  int st = memtable_get(m, key, klen, seq, &lk);
  if (st == LSM_LOOKUP_ABSENT) return -100;
  if (st == LSM_LOOKUP_DELETED) return ST_NOT_FOUND;
  void *p = malloc(lk.val_len ? lk.val_len : 1);
  if (!p) return err_set(err, ST_E_NOMEM, "get: out of memory");
  if (lk.val_len) memcpy(p, lk.val, lk.val_len);
  *val = p;
  *val_len = lk.val_len;
  return ST_OK;
}

/* lsm_get, with the data blocks memo keeps parsed from there (table_get_kept). */
static int get_kept(lsm_db_t *db, block_memo_t *memo, const void *key, size_t key_len, void **val,
                    size_t *val_len, err_t *err) {
  int rc = check_key(key, key_len, err);
  if (rc != ST_OK) return rc;
  uint64_t hash = blocked_filter_key_hash(key, key_len); /* once, for every filter */
  pthread_mutex_lock(&db->mu);
  read_state_t *rs = db->rs;
  if (rs) atomic_fetch_add_explicit(&rs->refs, 1, memory_order_relaxed);
  uint64_t seq = db->vs->last_sequence;
  pthread_mutex_unlock(&db->mu);
  if (!rs) { /* no memory for a read state: the slower path */
    view_t vw;
    view_acquire(db, &vw);
    rc = mem_get(vw.mem, key, key_len, vw.seq, val, val_len, err);
    if (rc == -100 && vw.imm) rc = mem_get(vw.imm, key, key_len, vw.seq, val, val_len, err);
    if (rc == -100) rc = version_get(db, vw.v, key, key_len, hash, vw.seq, memo, val, val_len, err);
    view_release(db, &vw);
    return rc;
  }
  rc = -100;
  if (mem_filter_may_contain(rs->mf, hash))
    rc = mem_get(rs->mem, key, key_len, seq, val, val_len, err);
  if (rc == -100 && rs->imm && mem_filter_may_contain(rs->imf, hash))
    rc = mem_get(rs->imm, key, key_len, seq, val, val_len, err);
  if (rc == -100) rc = version_get(db, rs->v, key, key_len, hash, seq, memo, val, val_len, err);
  read_state_unref(db, rs);
  return rc;
}

int lsm_get(lsm_db_t *db, const void *key, size_t key_len, void **val, size_t *val_len,
            err_t *err) {
  return get_kept(db, NULL, key, key_len, val, val_len, err);
}

/* The pieces go to the kernel AHEAD_BATCH at a time (env_read_batch's ring takes 64). */
#define AHEAD_BATCH 64

/* Makes the reads of a[0, k) (table_ahead_prepare, table_get_ahead) together and finishes
   them. */
static void ahead_batch(lsm_db_t *db, table_ahead_t *a, env_read_t *rd, size_t k) {
  if (k == 0) return;
  env_read_batch(db->io, rd, k, NULL);
  for (size_t j = 0; j < k; j++) table_ahead_finish(&a[j], &rd[j]);
}

/* Is a[0, k) reading t's data block i already? */
static int ahead_has(const table_ahead_t *a, size_t k, const table_t *t, uint32_t i) {
  for (size_t j = 0; j < k; j++)
    if (a[j].t == t && a[j].block == i) return 1;
  return 0;
}

void lsm_get_ahead(lsm_db_t *db, const key_ref_t *keys, size_t n) {
  if (n == 0) return;
  pthread_mutex_lock(&db->mu);
  read_state_t *rs = db->rs;
  if (rs) atomic_fetch_add_explicit(&rs->refs, 1, memory_order_relaxed);
  uint64_t seq = db->vs->last_sequence;
  pthread_mutex_unlock(&db->mu);
  if (!rs) return; /* no read state: each get reads for itself */
  table_ahead_t a[AHEAD_BATCH];
  env_read_t rd[AHEAD_BATCH];
  size_t k = 0;
  /* The gets put every block they miss into the cache: reading those blocks first puts in
     no more. */
  uint64_t fill = UINT64_MAX;
  for (size_t i = 0; i < n; i++) {
    const void *key = keys[i].bytes;
    size_t klen = keys[i].len;
    if (check_key(key, klen, NULL) != ST_OK) continue; /* the get says why */
    uint64_t hash = blocked_filter_key_hash(key, klen);
    lsm_lookup_t lk;
    if (mem_filter_may_contain(rs->mf, hash) &&
        memtable_get(rs->mem, key, klen, seq, &lk) != LSM_LOOKUP_ABSENT)
      continue;
    if (rs->imm && mem_filter_may_contain(rs->imf, hash) &&
        memtable_get(rs->imm, key, klen, seq, &lk) != LSM_LOOKUP_ABSENT)
      continue;
    probe_order_t o;
    probe_order_init(&o, rs->v, key, klen, hash);
    lsm_file_meta_t *f;
    table_t *t;
    while ((f = probe_order_next(&o)) && file_table(db, f, &t, NULL) == ST_OK) {
      int r = table_get_ahead(t, key, klen, hash, seq, &fill, &a[k], &rd[k]);
      if (r == TABLE_AHEAD_ABSENT) continue;
      if (r == TABLE_AHEAD_READ && ahead_has(a, k, t, a[k].block))
        block_cache_release(a[k].e); /* unpublished: freed */
      else if (r == TABLE_AHEAD_READ && ++k == AHEAD_BATCH)
        ahead_batch(db, a, rd, k), k = 0;
      break;
    }
  }
  ahead_batch(db, a, rd, k);
  read_state_unref(db, rs);
}

/* ---- snapshots ----------------------------------------------------------------------- */

struct lsm_snapshot {
  lsm_db_t *db;
  view_t vw;
  lsm_table_info_t *tables;
  lsm_file_meta_t **metas; /* parallel to tables */
  size_t ntables;
  size_t hint;       /* where snapshot_table's last lookup found its table */
  block_memo_t memo; /* the blocks its value scans matched in, for lsm_snapshot_get_latest */
  uint64_t fill;     /* bytes its reads of chosen blocks may still put into the block cache */
};

lsm_snapshot_t *lsm_snapshot_acquire(lsm_db_t *db) {
  lsm_snapshot_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->db = db;
  block_memo_init(&s->memo);
  s->fill = block_cache_reader_fill(db->blocks);
  view_acquire(db, &s->vw);
  size_t n = lsm_version_file_count(s->vw.v);
  s->tables = malloc((n + 1) * sizeof *s->tables);
  s->metas = malloc((n + 1) * sizeof *s->metas);
  if (!s->tables || !s->metas) {
    lsm_snapshot_release(s);
    return NULL;
  }
  for (int l = 0; l < LSM_NUM_LEVELS; l++) {
    size_t nl = s->vw.v->nfiles[l];
    for (size_t i = 0; i < nl; i++) {
      lsm_file_meta_t *f = s->vw.v->files[l][l == 0 ? nl - 1 - i : i];
      s->tables[s->ntables] = (lsm_table_info_t){f->number, f->size, l, f->max_seq};
      s->metas[s->ntables++] = f;
    }
  }
  return s;
}

void lsm_snapshot_release(lsm_snapshot_t *s) {
  if (!s) return;
  view_release(s->db, &s->vw);
  block_memo_release(&s->memo);
  free(s->tables);
  free(s->metas);
  free(s);
}

size_t lsm_snapshot_tables(const lsm_snapshot_t *s, const lsm_table_info_t **tables) {
  *tables = s->tables;
  return s->ntables;
}

/* The open table `number` of s. The lookup starts where the last one found its table: a search
   asks for its tables in the snapshot's order, each for several pieces, so that each pass of
   the search over its tables (read ahead, probe, scan) looks over the snapshot's once, not
   once per piece. */
static int snapshot_table(lsm_snapshot_t *s, uint64_t number, table_t **t, err_t *err) {
  for (size_t k = 0, i = s->hint; k < s->ntables; k++, i = i + 1 < s->ntables ? i + 1 : 0)
    if (s->tables[i].number == number) {
      s->hint = i;
      return file_table(s->db, s->metas[i], t, err);
    }
  return err_set(err, ST_E_INVALID, "snapshot: table %06" PRIu64 " is not in the snapshot", number);
}

int lsm_snapshot_scan_table(lsm_snapshot_t *s, uint64_t number, lsm_visit_fn fn, void *arg,
                            lsm_scan_stats_t *st, err_t *err) {
  table_t *t = NULL;
  int rc = snapshot_table(s, number, &t, err);
  return rc != ST_OK ? rc : table_scan(t, fn, arg, st, err);
}

int lsm_snapshot_scan_value(lsm_snapshot_t *s, uint64_t number, const void *val, size_t n,
                            lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st, err_t *err) {
  table_t *t = NULL;
  int rc = snapshot_table(s, number, &t, err);
  return rc != ST_OK ? rc : table_scan_value_kept(t, val, n, fn, arg, st, &s->memo, err);
}

int lsm_snapshot_read_meta_range(lsm_snapshot_t *s, uint64_t number, const char *name, uint64_t off,
                                 size_t len, void *buf, err_t *err) {
  table_t *t = NULL;
  int rc = snapshot_table(s, number, &t, err);
  return rc != ST_OK ? rc : table_read_meta_range(t, name, off, len, buf, &s->fill, err);
}

void lsm_snapshot_read_ahead(lsm_snapshot_t *s, const block_ahead_t *r, size_t n) {
  table_ahead_t a[AHEAD_BATCH];
  env_read_t rd[AHEAD_BATCH];
  size_t k = 0;
  table_t *t = NULL;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || r[i].number != r[i - 1].number)
      if (snapshot_table(s, r[i].number, &t, NULL) != ST_OK) t = NULL;
    if (t && table_ahead_prepare(t, r[i].meta, &r[i].block, &s->fill, &a[k], &rd[k]) &&
        ++k == AHEAD_BATCH)
      ahead_batch(s->db, a, rd, k), k = 0;
  }
  ahead_batch(s->db, a, rd, k);
}

int lsm_snapshot_scan_value_blocks(lsm_snapshot_t *s, uint64_t number, const block_ref_t *refs,
                                   size_t nrefs, const void *val, size_t n, lsm_visit_fn fn,
                                   void *arg, lsm_scan_stats_t *st, err_t *err) {
  table_t *t = NULL;
  int rc = snapshot_table(s, number, &t, err);
  return rc != ST_OK
             ? rc
             : table_scan_value_blocks_kept(t, refs, nrefs, val, n, fn, arg, st, &s->memo,
                                            &s->fill, err);
}

int lsm_snapshot_scan_blocks(lsm_snapshot_t *s, uint64_t number, const block_ref_t *refs,
                             size_t nrefs, const block_needle_t *nd, size_t nn, lsm_visit_fn fn,
                             void *arg, lsm_scan_stats_t *st, err_t *err) {
  table_t *t = NULL;
  int rc = snapshot_table(s, number, &t, err);
  if (rc != ST_OK) return rc;
  return nn ? table_scan_blocks_containing(t, refs, nrefs, nd, nn, fn, arg, st, &s->memo, &s->fill,
                                           err)
            : table_scan_blocks(t, refs, nrefs, fn, arg, st, &s->fill, err);
}

/* Proof that this is lsm_get's answer (doc/search.md "Validation"): get_kept runs lsm_get's
   lookup on the newest state, memtables and tables alike, in the same order; the only
   difference is where the bytes of a data block come from when the lookup reaches one that
   s->memo keeps, and those are the bytes a read of the file would give (block_memo.h). */
int lsm_snapshot_get_latest(lsm_snapshot_t *s, const void *key, size_t key_len, void **val,
                            size_t *val_len, err_t *err) {
  return get_kept(s->db, &s->memo, key, key_len, val, val_len, err);
}

void lsm_snapshot_memo_stats(const lsm_snapshot_t *s, size_t *blocks, uint64_t *hits) {
  *blocks = s->memo.n;
  *hits = s->memo.hits;
}

typedef struct seq_filter {
  lsm_visit_fn fn;
  void *arg;
  uint64_t seq;
} seq_filter_t;

static int visit_upto_seq(void *arg, const void *key, size_t key_len, const void *val,
                          size_t val_len, uint64_t seq, int type) {
  seq_filter_t *f = arg;
  if (seq > f->seq) return 0; /* written after the snapshot */
  return f->fn(f->arg, key, key_len, val, val_len, seq, type);
}

int lsm_snapshot_scan_memtables(lsm_snapshot_t *s, lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st,
                                err_t *err) {
  (void)err;
  seq_filter_t f = {fn, arg, s->vw.seq};
  int rc = memtable_scan(s->vw.mem, visit_upto_seq, &f, st);
  if (rc == ST_OK && s->vw.imm) rc = memtable_scan(s->vw.imm, visit_upto_seq, &f, st);
  return rc;
}

int lsm_snapshot_scan_memtables_value(lsm_snapshot_t *s, const void *val, size_t n, lsm_visit_fn fn,
                                      void *arg, lsm_scan_stats_t *st, err_t *err) {
  (void)err;
  seq_filter_t f = {fn, arg, s->vw.seq};
  int rc = memtable_scan_value(s->vw.mem, val, n, visit_upto_seq, &f, st);
  if (rc == ST_OK && s->vw.imm) rc = memtable_scan_value(s->vw.imm, val, n, visit_upto_seq, &f, st);
  return rc;
}

int lsm_snapshot_find_memtables_value(lsm_snapshot_t *s, const void *val, size_t n, uint64_t hash,
                                      lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st,
                                      err_t *err) {
  (void)err;
  seq_filter_t f = {fn, arg, s->vw.seq};
  int rc = memtable_scan_value_hashed(s->vw.mem, val, n, hash, visit_upto_seq, &f, st);
  if (rc == ST_OK && s->vw.imm)
    rc = memtable_scan_value_hashed(s->vw.imm, val, n, hash, visit_upto_seq, &f, st);
  return rc;
}

/* memtable_scan_hash, or memtable_scan for a memtable without value index. */
static int memtable_find_hash(const memtable_t *m, uint64_t hash, seq_filter_t *f,
                              lsm_scan_stats_t *st) {
  int rc = memtable_scan_hash(m, hash, visit_upto_seq, f, st);
  return rc == ST_E_INVALID ? memtable_scan(m, visit_upto_seq, f, st) : rc;
}

int lsm_snapshot_find_memtables_hash(lsm_snapshot_t *s, uint64_t hash, lsm_visit_fn fn, void *arg,
                                     lsm_scan_stats_t *st, err_t *err) {
  (void)err;
  seq_filter_t f = {fn, arg, s->vw.seq};
  int rc = memtable_find_hash(s->vw.mem, hash, &f, st);
  if (rc == ST_OK && s->vw.imm) rc = memtable_find_hash(s->vw.imm, hash, &f, st);
  return rc;
}

int lsm_table_read_meta(lsm_db_t *db, uint64_t number, const char *name, void **data, size_t *size,
                        uint64_t *offset, err_t *err) {
  table_t *t = NULL;
  int rc = table_cache_get(db->tc, number, &t, err);
  if (rc != ST_OK) return rc;
  rc = table_read_meta(t, name, data, size, offset, err);
  table_unref(t);
  return rc;
}

char *lsm_table_path(const lsm_db_t *db, uint64_t number) {
  return table_file_path(db->dir, number);
}

/* ---- iterators ----------------------------------------------------------------------- */

struct lsm_iter {
  lsm_db_t *db;
  view_t vw;
  iterator_t *merged;
  user_iter_t user; /* over merged, at the view's sequence */
  err_t err;        /* a table that would not open, for its child's status */
};

lsm_iter_t *lsm_iter_create(lsm_db_t *db) {
  lsm_iter_t *it = calloc(1, sizeof *it);
  if (!it) return NULL;
  it->db = db;
  view_acquire(db, &it->vw);
  size_t n = 2 + lsm_version_file_count(it->vw.v); /* + the two memtables */
  iterator_t **children = calloc(n, sizeof *children);
  size_t k = 0;
  int rc = children ? ST_OK : ST_E_NOMEM;
  if (rc == ST_OK) {
    children[k++] = memtable_iterator_create(it->vw.mem);
    if (it->vw.imm) children[k++] = memtable_iterator_create(it->vw.imm);
    /* L0's files overlap: one child each, newest first, so that equal keys come from the
       newest source first. A deeper level's are disjoint: one child for the level. */
    size_t n0 = it->vw.v->nfiles[0];
    for (size_t i = 0; i < n0; i++) {
      table_t *t;
      rc = file_table(db, it->vw.v->files[0][n0 - 1 - i], &t, &it->err);
      children[k++] = rc == ST_OK ? table_iterator_create(t) : iterator_empty_create(rc, &it->err);
      rc = ST_OK; /* the error surfaces through the merged iterator's status */
    }
    for (int l = 1; l < LSM_NUM_LEVELS; l++)
      if (it->vw.v->nfiles[l])
        children[k++] =
            level_iterator_create(it->vw.v->files[l], it->vw.v->nfiles[l], env_open_table, db);
    for (size_t i = 0; i < k; i++)
      if (!children[i]) rc = ST_E_NOMEM;
  }
  if (rc == ST_OK) {
    it->merged = merging_iterator_create(children, k);
    if (!it->merged) rc = ST_E_NOMEM;
  } else if (children) {
    for (size_t i = 0; i < k; i++) iterator_destroy(children[i]);
  }
  free(children);
  if (rc != ST_OK) {
    lsm_iter_destroy(it);
    return NULL;
  }
  user_iter_init(&it->user, it->merged, it->vw.seq);
  return it;
}

void lsm_iter_destroy(lsm_iter_t *it) {
  if (!it) return;
  user_iter_release(&it->user);
  iterator_destroy(it->merged);
  view_release(it->db, &it->vw);
  free(it);
}

void lsm_iter_seek_first(lsm_iter_t *it) {
  user_iter_seek_first(&it->user);
}

void lsm_iter_seek(lsm_iter_t *it, const void *key, size_t key_len) {
  user_iter_seek(&it->user, key, key_len);
}

int lsm_iter_valid(const lsm_iter_t *it) {
  return user_iter_valid(&it->user);
}

void lsm_iter_next(lsm_iter_t *it) {
  user_iter_next(&it->user);
}

const void *lsm_iter_key(const lsm_iter_t *it, size_t *len) {
  return user_iter_key(&it->user, len);
}

const void *lsm_iter_value(const lsm_iter_t *it, size_t *len) {
  return user_iter_value(&it->user, len);
}

int lsm_iter_status(const lsm_iter_t *it, err_t *err) {
  return user_iter_status(&it->user, err);
}

/* ---- stats --------------------------------------------------------------------------- */

void lsm_get_stats(lsm_db_t *db, lsm_stats_t *st) {
  pthread_mutex_lock(&db->mu);
  *st = db->stats;
  for (int l = 0; l < LSM_NUM_LEVELS; l++) {
    st->files_per_level[l] = (uint32_t)db->vs->current->nfiles[l];
    st->bytes_per_level[l] = lsm_version_level_bytes(db->vs->current, l);
  }
  st->memtable_index_bytes = memtable_value_index_bytes(db->mem);
  if (db->imm) st->memtable_index_bytes += memtable_value_index_bytes(db->imm);
  pthread_mutex_unlock(&db->mu);
  block_cache_stats_t bc;
  block_cache_get_stats(db->blocks, &bc);
  st->block_cache_hits = bc.hits;
  st->block_cache_misses = bc.misses;
  st->block_cache_bytes = bc.bytes;
}

/* ---- open / recovery / close --------------------------------------------------------- */

typedef struct replay {
  lsm_db_t *db;
  memtable_t *mem;  /* what the logs hold that no table holds yet */
  mem_filter_t *mf; /* the keys of mem, for lsm_get */
  uint64_t max_seq;
  int flushed; /* mem filled up and went to a table during the replay */
  int whole;   /* the last log replayed was read to its end with nothing dropped */
} replay_t;

static int max_seq_fn(void *arg, uint64_t seq, int type, const void *key, size_t klen,
                      const void *val, size_t vlen) {
  (void)type, (void)key, (void)klen, (void)val, (void)vlen;
  replay_t *r = arg;
  if (seq > r->max_seq) r->max_seq = seq;
  return 0;
}

/* lsm_options.replay for one record of a replayed log. */
static int tell_replay(void *arg, uint64_t seq, int type, const void *key, size_t klen,
                       const void *val, size_t vlen) {
  const lsm_db_t *db = arg;
  return db->opt.replay(db->opt.replay_arg, key, klen, val, vlen, seq, type) ? 1 : 0;
}

/* After the last record of log `number`: a log the database closed cleanly must have been
   read whole (a damaged or cut-short tail there is lost data, not a write torn by a crash);
   any other log may end in a torn tail, which is dropped and noted (damage_seen). */
static int check_log_end(lsm_db_t *db, log_reader_t *lr, uint64_t number, const char *path,
                         err_t *err) {
  uint64_t dropped = log_reader_dropped_bytes(lr), end = log_reader_end_offset(lr);
  const lsm_version_set_t *vs = db->vs;
  if (vs->has_closed_log && vs->closed_log == number && (dropped || end != vs->closed_log_size))
    return err_set(err, ST_E_CORRUPT,
                   "log %s: closed cleanly at %" PRIu64 " bytes, but %s at %" PRIu64, path,
                   vs->closed_log_size, dropped ? "its records end" : "the file ends", end);
  if (dropped) db->damage_seen = 1;
  return ST_OK;
}

/* A fresh memtable and key filter for r after r->mem went to a table. */
static int replay_restart(replay_t *r, err_t *err) {
  memtable_unref(r->mem);
  mem_filter_unref(r->mf);
  r->mem = new_memtable(r->db);
  r->mf = new_mem_filter(r->db);
  if (!r->mem || !r->mf) return err_set(err, ST_E_NOMEM, "recovery: out of memory");
  return ST_OK;
}

static int replay_record(replay_t *r, const void *data, size_t n, err_t *err) {
  lsm_db_t *db = r->db;
  int rc = write_batch_iterate(data, n, max_seq_fn, r, err);
  if (rc == ST_OK && db->opt.replay && write_batch_iterate(data, n, tell_replay, db, NULL) != 0)
    rc = err_set(err, ST_E_NOMEM, "replay callback failed");
  if (rc == ST_OK) rc = write_batch_insert(data, n, r->mem, err);
  if (rc == ST_OK) (void)write_batch_iterate(data, n, add_key_hash, r->mf, NULL);
  return rc;
}

/* Replays log `number` into r->mem, flushing it into edit whenever it fills up.
   REQUIRES mu (flushes release it). */
static int replay_log(lsm_db_t *db, uint64_t number, replay_t *r, lsm_version_edit_t *edit,
                      err_t *err) {
  char *path = lsm_filename_log(db->dir, number);
  if (!path)
    return err_set(err, ST_E_NOMEM, "no memory for the path of log %06llu",
                   (unsigned long long)number);
  log_reader_t *lr = NULL;
  int rc = log_reader_open(db->io, path, &lr, err);
  if (rc != ST_OK) {
    free(path);
    return rc;
  }
  for (;;) {
    const void *data;
    size_t n;
    rc = log_reader_next(lr, &data, &n, err);
    if (rc == ST_NOT_FOUND) {
      rc = ST_OK;
      break;
    }
    if (rc != ST_OK) break;
    uint64_t off = log_reader_record_offset(lr);
    rc = replay_record(r, data, n, err);
    if (rc != ST_OK) {
      err_prefix(err, "log %s: record at %" PRIu64 ": ", path, off);
      break;
    }
    if (memtable_full(db, r->mem)) {
      uint64_t tnum;
      rc = write_level0(db, r->mem, edit, 0, &tnum, err);
      if (rc == ST_OK) rc = replay_restart(r, err);
      if (rc != ST_OK) break;
      r->flushed = 1;
    }
  }
  if (rc == ST_OK) rc = check_log_end(db, lr, number, path, err);
  uint64_t size = 0;
  r->whole = rc == ST_OK && log_reader_dropped_bytes(lr) == 0 &&
             env_path_size(db->io, path, &size, NULL) == ST_OK && size == log_reader_end_offset(lr);
  log_reader_close(lr);
  free(path);
  return rc;
}

/* Replays the logs the manifest still needs. When there is one, read whole, whose entries
   all fit in a memtable, that memtable becomes db->mem and *reuse is the log's number: the
   open keeps appending to it instead of writing its entries into a level-0 table (LevelDB's
   reuse_logs), so that a program that opens, writes a little and closes does not leave a
   table per run. Otherwise the entries go to level-0 tables and *reuse is 0. */
static int recover_logs(lsm_db_t *db, lsm_version_edit_t *edit, uint64_t *reuse, err_t *err) {
  *reuse = 0;
  char **names = NULL;
  size_t n = 0;
  int rc = env_list_dir(db->io, db->dir, &names, &n, err);
  if (rc != ST_OK) return rc;
  u64vec_t logs;
  u64vec_init(&logs);
  for (size_t i = 0; i < n; i++) {
    uint64_t number;
    lsm_file_type_t type;
    if (!lsm_filename_parse(names[i], &number, &type)) continue;
    if (number >= db->vs->next_file) db->vs->next_file = number + 1;
    if (type == LSM_FILE_LOG && number >= db->vs->log_number &&
        u64vec_push(&logs, number) != ST_OK) {
      rc = err_set(err, ST_E_NOMEM, "recovery: out of memory");
      break;
    }
  }
  env_names_free(names, n);
  db->first_own_file = db->vs->next_file; /* above every file in the directory */
  u64vec_sort(&logs);
  replay_t r = {.db = db, .max_seq = db->vs->last_sequence};
  if (rc == ST_OK) rc = replay_restart(&r, err);
  for (size_t i = 0; i < logs.n && rc == ST_OK; i++) rc = replay_log(db, logs.v[i], &r, edit, err);
  if (rc == ST_OK && logs.n == 1 && !r.flushed && r.whole) {
    *reuse = logs.v[0];
    memtable_unref(db->mem);
    mem_filter_unref(db->mf);
    db->mem = r.mem;
    db->mf = r.mf;
    r.mem = NULL;
    r.mf = NULL;
  } else if (rc == ST_OK) {
    uint64_t tnum;
    rc = write_level0(db, r.mem, edit, 0, &tnum, err);
  }
  if (rc == ST_OK && r.max_seq > db->vs->last_sequence) db->vs->last_sequence = r.max_seq;
  memtable_unref(r.mem);
  mem_filter_unref(r.mf);
  u64vec_release(&logs);
  return rc;
}

/* After the manifest is read: every table the recovered version lists, and the log it
   names as the oldest still needed, must exist (a log is created before any manifest record
   names it, and deleted only after a later record moved past it). A manifest whose last
   record was damaged or cut short is accepted only when that holds: then the record was a
   change that never committed (a crash in the middle of writing it), or one whose old files
   are all still there, and nothing is lost. Otherwise committed changes are gone, and the
   open is refused (bfh repair rebuilds the manifest from the tables). */
static int check_files(lsm_db_t *db, err_t *err) {
  lsm_version_set_t *vs = db->vs;
  char *path = NULL; /* the file looked at last: the missing one */
  int missing = 0, nomem = 0;
  for (int level = 0; level < LSM_NUM_LEVELS && !missing && !nomem; level++)
    for (size_t i = 0; i < vs->current->nfiles[level] && !missing && !nomem; i++) {
      free(path);
      path = table_file_path(db->dir, vs->current->files[level][i]->number);
      nomem = !path;
      missing = path && !env_exists(db->io, path);
    }
  if (!missing && !nomem) {
    free(path);
    path = lsm_filename_log(db->dir, vs->log_number);
    nomem = !path;
    missing = path && !env_exists(db->io, path);
  }
  char *manifest = nomem ? NULL : lsm_filename_manifest(db->dir, vs->manifest_number);
  int rc = ST_OK;
  if (!manifest)
    rc = err_set(err, ST_E_NOMEM, "%s: no memory to check the files of the database", db->dir);
  else if (vs->manifest_dropped && missing)
    rc = err_set(err, ST_E_CORRUPT,
                 "%s: the records from offset %" PRIu64 " (%" PRIu64
                 " bytes) are damaged or cut short, and %s, which the records before them "
                 "need, is gone: committed changes were lost (bfh repair salvages the tables)",
                 manifest, vs->manifest_valid_end, vs->manifest_dropped, path);
  else if (missing)
    rc = err_set(err, ST_E_CORRUPT, "%s: missing, but %s lists it", path, manifest);
  else if (vs->manifest_dropped)
    db->damage_seen = 1;
  free(path);
  free(manifest);
  return rc;
}

int lsm_options_check(const char *dir, const lsm_options_t *o, err_t *err) {
  if (!dir || !*dir) return err_set(err, ST_E_INVALID, "empty database path");
  if (o->memtable_bytes < 4096 || o->memtable_bytes > ((size_t)1 << 32))
    return err_set(err, ST_E_INVALID, "memtable_bytes %zu out of range [4096, 4 GiB]",
                   o->memtable_bytes);
  if (o->table_bytes < 4096 || o->table_bytes > ((size_t)1 << 32))
    return err_set(err, ST_E_INVALID, "table_bytes %zu out of range [4096, 4 GiB]", o->table_bytes);
  if (o->block_bytes < 256 || o->block_bytes > (1u << 24))
    return err_set(err, ST_E_INVALID, "block_bytes %zu out of range [256, 16 MiB]", o->block_bytes);
  if (!(o->key_bits_per_key >= 0 && o->key_bits_per_key <= 64))
    return err_set(err, ST_E_INVALID, "key_bits_per_key %g out of range [0, 64]",
                   o->key_bits_per_key);
  if (o->level1_bytes < 4096)
    return err_set(err, ST_E_INVALID, "level1_bytes %" PRIu64 " below 4096", o->level1_bytes);
  return ST_OK;
}

/* Does the manifest at path hold anything of a database that was used: a table, a write
   (a sequence number above 0), or a record that does not check out (which could have been
   either)? A create that failed before writing CURRENT leaves a manifest with none. */
static int manifest_holds_data(env_t *io, const char *path) {
  log_reader_t *r = NULL;
  if (log_reader_open(io, path, &r, NULL) != ST_OK) return 1;
  int data = 0;
  for (;;) {
    const void *rec;
    size_t n;
    int rc = log_reader_next(r, &rec, &n, NULL);
    if (rc == ST_NOT_FOUND) break; /* a torn tail is a write in flight, not data */
    if (rc != ST_OK) {
      data = 1;
      break;
    }
    lsm_version_edit_t e;
    lsm_version_edit_init(&e);
    data = lsm_version_edit_decode(&e, rec, n, path, NULL) != ST_OK || e.nadded > 0 ||
           (e.has_last_sequence && e.last_sequence > 0);
    lsm_version_edit_release(&e);
    if (data) break;
  }
  log_reader_close(r);
  return data;
}

/* A directory without CURRENT may become a new database only if it holds no file of an
   old one: what a create that failed before CURRENT was written leaves (IDENTITY, LOCK,
   CURRENT.tmp, empty logs, a manifest without tables or writes) holds nothing. A table, a
   log with records, a manifest that says the database was used or the caller's marker file
   (written once an open completed) means CURRENT was lost:
   a damaged database, which a create would start over on (and whose files the new
   database's first cleanup would delete). ST_E_CORRUPT naming the first such file. */
static int check_no_old_files(env_t *io, const char *dir, const char *marker, err_t *err) {
  char **names = NULL;
  size_t n = 0;
  int rc = env_list_dir(io, dir, &names, &n, err);
  if (rc != ST_OK) return rc;
  const char *found = NULL; /* the message names a table, else a log, else a manifest */
  int found_rank = 3;
  for (size_t i = 0; i < n && found_rank > 0; i++) {
    uint64_t number, size = 0;
    lsm_file_type_t type;
    if (marker && strcmp(names[i], marker) == 0 && found_rank > 2) {
      found = names[i];
      found_rank = 2;
      continue;
    }
    if (!lsm_filename_parse(names[i], &number, &type)) continue;
    int rank = type == LSM_FILE_TABLE      ? 0
               : type == LSM_FILE_LOG      ? 1
               : type == LSM_FILE_MANIFEST ? 2
                                           : 3;
    if (rank >= found_rank) continue;
    char *path = path_join(dir, names[i]);
    if (!path) {
      rc = err_set(err, ST_E_NOMEM, "%s: no memory for the path of %s", dir, names[i]);
      break;
    }
    if (type == LSM_FILE_TABLE ||
        (type == LSM_FILE_LOG && (env_path_size(io, path, &size, NULL) != ST_OK || size > 0)) ||
        (type == LSM_FILE_MANIFEST && manifest_holds_data(io, path))) {
      found = names[i];
      found_rank = rank;
    }
    free(path);
  }
  if (rc == ST_OK && found)
    rc = err_set(err, ST_E_CORRUPT,
                 "%s: damaged database: CURRENT is missing, but the directory holds %s (a "
                 "file of a database); nothing was changed: run `bfh repair %s` (bfh_repair) "
                 "to rebuild it from its tables and logs",
                 dir, found, dir);
  env_names_free(names, n);
  return rc;
}

/* Checks that dir is (or may become) a bfh LSM database; *exists = it has a CURRENT. */
static int check_identity(env_t *io, const char *dir, int create, const char *marker, int *exists,
                          err_t *err) {
  char *ident = lsm_filename_identity(dir), *cur = lsm_filename_current(dir);
  int has_ident = ident && env_exists(io, ident), has_cur = cur && env_exists(io, cur);
  int nomem = !ident || !cur;
  free(ident);
  free(cur);
  if (nomem) return err_set(err, ST_E_NOMEM, "%s: no memory for the paths of its files", dir);
  *exists = has_cur;
  if (!has_cur) {
    int rc = check_no_old_files(io, dir, marker, err);
    if (rc != ST_OK) return rc;
  }
  if (has_ident) {
    int rc = lsm_identity_read(io, dir, err);
    if (rc != ST_OK) return rc;
    if (!has_cur && !create)
      return err_set(err, ST_E_INVALID, "%s: database was never completed (no CURRENT)", dir);
    return ST_OK;
  }
  if (has_cur)
    return err_set(err, ST_E_INVALID,
                   "%s: not a bfh lsm database (CURRENT without IDENTITY; a LevelDB database?)",
                   dir);
  if (!create)
    return err_set(err, ST_E_INVALID,
                   "%s: not a bfh lsm database (no IDENTITY) and "
                   "create_if_missing is off",
                   dir);
  return ST_OK;
}

int lsm_open(const char *dir, const lsm_options_t *opt, lsm_db_t **out, err_t *err) {
  lsm_options_t defaults;
  if (!opt) {
    lsm_options_init(&defaults);
    opt = &defaults;
  }
  int rc = lsm_options_check(dir, opt, err);
  if (rc != ST_OK) return rc;
  env_t *io = opt->io ? opt->io : env_default();
  if (opt->create_if_missing) {
    rc = env_mkdir(io, dir, err);
    if (rc != ST_OK) return rc;
  } else if (!env_exists(io, dir)) {
    return err_set(err, ST_E_INVALID, "%s: does not exist and create_if_missing is off", dir);
  }
  int exists = 0;
  rc = check_identity(io, dir, opt->create_if_missing, opt->marker_file, &exists, err);
  if (rc != ST_OK) return rc;

  lsm_db_t *db = calloc(1, sizeof *db);
  if (!db || !(db->dir = strdup(dir))) {
    free(db);
    return err_set(err, ST_E_NOMEM, "open: out of memory");
  }
  db->opt = *opt;
  db->io = io;
  pthread_mutex_init(&db->mu, NULL);
  pthread_cond_init(&db->bg_cv, NULL);
  pthread_cond_init(&db->done_cv, NULL);
  u64vec_init(&db->pending);
  write_batch_init(&db->group);
  table_builder_options_init(&db->topt);
  db->topt.block_bytes = opt->block_bytes;
  db->topt.key_bits_per_key = opt->key_bits_per_key;
  db->topt.hook = opt->hook;
  db->topt.sync = 1;

  char *path = lsm_filename_lock(dir);
  rc = path ? env_lock(io, path, &db->lock, err)
            : err_set(err, ST_E_NOMEM, "%s/LOCK: no memory for its path", dir);
  free(path);
  if (rc == ST_E_BUSY) err_set(err, ST_E_BUSY, "%s: database is open elsewhere (LOCK held)", dir);
  if (rc == ST_OK && !exists) {
    uint8_t id[LSM_IDENTITY_BYTES];
    lsm_identity_encode(id);
    path = lsm_filename_identity(dir);
    rc = path ? env_write_file(io, path, id, sizeof id, err)
              : err_set(err, ST_E_NOMEM, "%s/IDENTITY: no memory for its path", dir);
    /* A partial IDENTITY would make the directory unusable: the next create starts over. */
    if (rc != ST_OK && path) (void)env_unlink(io, path, NULL);
    free(path);
    if (rc == ST_OK) rc = env_sync_dir(io, dir, err);
  }
  if (rc == ST_OK) {
    db->tc = table_cache_create(io, dir, 0);
    if (opt->block_cache_bytes && db->tc &&
        !(db->blocks = block_cache_create(opt->block_cache_bytes)))
      rc = err_set(err, ST_E_NOMEM, "open: out of memory");
    if (!db->tc) rc = err_set(err, ST_E_NOMEM, "open: out of memory");
    if (rc == ST_OK) {
      table_cache_set_block_cache(db->tc, db->blocks);
      table_cache_set_mapped(db->tc, opt->mmap_reads);
    }
  }
  if (rc == ST_OK) rc = lsm_version_set_create(dir, io, opt->level1_bytes, &db->vs, err);
  if (rc == ST_OK && exists) rc = lsm_version_set_recover(db->vs, err);
  if (rc == ST_OK && exists) rc = check_files(db, err);
  db->mem = rc == ST_OK ? new_memtable(db) : NULL;
  db->mf = rc == ST_OK ? new_mem_filter(db) : NULL;
  if (rc == ST_OK && (!db->mem || !db->mf)) rc = err_set(err, ST_E_NOMEM, "open: out of memory");

  pthread_mutex_lock(&db->mu);
  lsm_version_edit_t edit;
  lsm_version_edit_init(&edit);
  uint64_t reuse = 0;
  if (rc == ST_OK) rc = recover_logs(db, &edit, &reuse, err);
  /* A clean database (its one log replayed whole into the memtable, nothing flushed, no
     damage met) is opened without writing: no manifest, no CURRENT, no fsync. The writer
     starts at the first write (start_writer), which does what the rest of this open would
     have done; a process that only reads leaves every file as it found it. LOCK is held
     either way, so no other process writes beside this one. */
  int defer =
      rc == ST_OK && reuse && edit.nadded == 0 && !db->damage_seen && !db->vs->manifest_dropped;
  if (defer) {
    db->log_number = reuse;
    db->writer_state = WRITER_PENDING;
    refresh_read_state(db);
    call_tables_live(db);
  } else if (rc == ST_OK) {
    db->log_number = reuse ? reuse : lsm_version_set_new_file_number(db->vs);
    path = lsm_filename_log(dir, db->log_number);
    rc = !path   ? err_set(err, ST_E_NOMEM, "open: no memory for the path of log %06llu",
                           (unsigned long long)db->log_number)
         : reuse ? log_writer_open_append(io, path, &db->log, err)
                 : log_writer_open(io, path, &db->log, err);
    free(path);
  }
  if (rc == ST_OK && !defer) {
    lsm_version_edit_set_log_number(&edit, db->log_number);
    rc = lsm_version_set_log_and_apply(db->vs, &edit, &db->mu, err);
  }
  for (size_t i = 0; i < edit.nadded; i++) pending_remove(db, edit.added[i].meta->number);
  lsm_version_edit_release(&edit);
  if (rc == ST_OK && !defer) refresh_read_state(db);
  if (rc == ST_OK && !defer) call_tables_live(db);
  if (rc == ST_OK && !defer) delete_obsolete_files(db, 1);
  pthread_mutex_unlock(&db->mu);
  if (rc == ST_OK && !defer) {
    if (pthread_create(&db->bg_thread, NULL, bg_main, db) != 0)
      rc = err_set(err, ST_E_NOMEM, "open: cannot start the background thread");
    else
      db->bg_started = 1;
  }
  if (rc != ST_OK) {
    lsm_close(db);
    return rc;
  }
  pthread_mutex_lock(&db->mu);
  pthread_cond_signal(&db->bg_cv); /* recovery may have left a compaction due */
  pthread_mutex_unlock(&db->mu);
  *out = db;
  return ST_OK;
}

/* A clean close syncs the log and says in the manifest how long it is, so that the next
   open replays all of it and takes no damage there for a write torn by a crash. If this
   fails the database is still whole: the next open treats the log as after a crash. */
static int record_clean_close(lsm_db_t *db, err_t *err) {
  err_t e;
  int rc = log_writer_sync(db->log, &e);
  if (rc != ST_OK) {
    if (err) *err = e;
    return rc;
  }
  lsm_version_edit_t edit;
  lsm_version_edit_init(&edit);
  lsm_version_edit_set_log_closed(&edit, db->log_number, log_writer_size(db->log));
  pthread_mutex_lock(&db->mu);
  rc = lsm_version_set_log_and_apply(db->vs, &edit, &db->mu, &e);
  pthread_mutex_unlock(&db->mu);
  lsm_version_edit_release(&edit);
  if (rc != ST_OK && err) *err = e;
  return rc;
}

int lsm_close(lsm_db_t *db) {
  return lsm_close_err(db, NULL);
}

/* Stops the background thread; with settle, a memtable waiting to be flushed is flushed
   first (the thread is running when there is one). */
static void stop_background(lsm_db_t *db, int settle) {
  if (db->bg_stopped) return;
  pthread_mutex_lock(&db->mu);
  while (settle && db->bg_started && db->imm && !db->bg_error) {
    pthread_cond_signal(&db->bg_cv);
    pthread_cond_wait(&db->done_cv, &db->mu);
  }
  atomic_store(&db->shutting_down, 1);
  pthread_cond_broadcast(&db->bg_cv);
  pthread_mutex_unlock(&db->mu);
  if (db->bg_started) pthread_join(db->bg_thread, NULL);
  db->bg_stopped = 1;
}

void lsm_stop_background(lsm_db_t *db) {
  if (db) stop_background(db, 1);
}

int lsm_close_err(lsm_db_t *db, err_t *err) {
  if (!db) return ST_OK;
  stop_background(db, 0);
  int rc = db->bg_error;
  if (rc != ST_OK && err) report_bg_error(db, err);
  if (rc == ST_OK && db->bg_started) rc = record_clean_close(db, err);
  (void)log_writer_close(db->log, NULL);
  pthread_mutex_lock(&db->mu);
  if (db->rs) read_state_free(db->rs);
  db->rs = NULL;
  pthread_mutex_unlock(&db->mu);
  memtable_unref(db->mem);
  memtable_unref(db->imm);
  mem_filter_unref(db->mf);
  mem_filter_unref(db->imf);
  lsm_version_set_destroy(db->vs);
  table_cache_destroy(db->tc);
  block_cache_destroy(db->blocks); /* after the tables that use it */
  env_unlock(db->lock);
  write_batch_release(&db->group);
  u64vec_release(&db->pending);
  pthread_cond_destroy(&db->bg_cv);
  pthread_cond_destroy(&db->done_cv);
  pthread_mutex_destroy(&db->mu);
  free(db->dir);
  free(db);
  return rc == ST_OK ? ST_OK : rc;
}
