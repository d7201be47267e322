/* engine_t over stock LevelDB 1.23 through its C API only (doc/leveldb.md).
 *
 * put, delete and get go to leveldb_put / leveldb_delete / leveldb_get. LevelDB opens with its
 * default options (snappy, 4 MiB write buffer and 2 MiB tables unless bfh_options says
 * otherwise) plus a bloom key filter policy of key_bits_per_key (default 10) bits.
 *
 * The emulated table-build hook ("sync"), serialized by sync_mu, in this order:
 *   1. (views only) list the *.log files of the directory and read each from where the last
 *      read stopped (ldb_log.h; a truncated tail is a write in flight, read again next time).
 *      Their value entries are kept in immutable, reference-counted segments: they are the
 *      memtables. A log deleted meanwhile is dropped: its table is installed before the
 *      deletion. Other syncs only drop the segments of deleted logs: nothing but a view
 *      needs the entries, so ingest pays no log reading.
 *   2. fetch leveldb.sstables, create an iterator (it pins the current version: its files
 *      are not deleted while it lives), fetch the list again; equal lists mean the pinned
 *      version holds every listed file (file numbers are never reused), else retry.
 *   3. each listed table not indexed yet gets a value filter: from the sidecar cache
 *      <db>/bfh-filters/NNNNNN.vf when it matches the table's number and size, else by
 *      reading the table (ldb_filter.h), then value_index_add_batch. A listed file that has
 *      vanished makes the sync fetch the list again. A table that cannot be read gets no leaf:
 *      value_index_select scans every table without one, so it counts as always matching and
 *      its scan reports the error; it is never skipped. The background sync indexes only
 *      tables listed for at least BG_MIN_AGE_NS (1 s; younger ones are recorded as deferred),
 *      so that a table that dies young (L0 and compaction outputs under ingest) costs
 *      nothing; a view or a flush indexes every listed table, deferred ones included, and a
 *      table still without a leaf is scanned, as above.
 *      Cache files: with leaves on disk the file holds the leaf, so it is written before the
 *      leaf is added. With leaves in memory it only makes a reopen faster: its bytes are
 *      kept and written once the table has been listed for
 *      ENGINE_LEVELDB_CACHE_DELAY_NS (2 s), or at close for
 *      every table still listed; a table gone before that never gets a file.
 *   4. tables that left the list lose their leaf (and cache file) once no view that may list
 *      them is alive (epochs: a view taken at sync epoch E lists no table found unlisted at
 *      an epoch <= E), so a search never loses a table between its list and its scan.
 * Reading logs before fetching the list is what makes a search miss no acknowledged write:
 * a put's record is in a log file (write(2) before leveldb_put returns) that is either read
 * or deleted, and a deleted log's data is in a table listed afterwards.
 *
 * The sync runs in view_acquire (before every search) and, with a value index, every 100 ms
 * in a background thread, so that a search rarely has tables to index itself. A view keeps the
 * pinning iterator, the table list and references to the log segments until it is released.
 *
 * flush: the C API has no flush. leveldb_compact_range(db, "", "") with an empty key range
 * does it: DBImpl::CompactRange (1.23) first forces the memtable out (TEST_CompactMemTable:
 * a memtable switch and a wait until the immutable memtable is a table), then compacts only
 * the levels overlapping the range: with the empty user key as both ends, none (unless the
 * database holds the empty key, which bfh never writes). compact_range returns no status: an
 * empty batch written after it returns LevelDB's background error (a memtable that could not
 * be written). Then the sync indexes the new table.
 *
 * Damage (doc/leveldb.md, "Damage"): LevelDB runs with paranoid_checks and verify_checksums;
 * ldb_precheck checks CURRENT, the MANIFEST and the logs before leveldb_open; a Corruption
 * status is BFH_E_CORRUPT naming the damaged file (diagnose_corruption). A log read that meets
 * a damaged-looking record reads it again holding write_lock exclusively (puts, deletes and
 * flushes hold it shared), so that an append in flight is never taken for damage.
 */
#include <dirent.h>
#include <errno.h>
#include <leveldb/c.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lsm/io.h"
#include "lsm_hooks/engine.h"
#include "lsm_hooks/engine_leveldb.h"
#include "lsm_hooks/ldb_filter.h"
#include "lsm_hooks/ldb_log.h"
#include "lsm_hooks/ldb_precheck.h"
#include "lsm_hooks/ldb_sstables.h"
#include "lsm_hooks/ldb_table.h"
#include "util/coding.h"

#define BG_PERIOD_NS 100000000ull   /* background sync every 100 ms */
#define BG_MIN_AGE_NS 1000000000ull /* the background indexes tables listed for 1 s */
#define PIN_ATTEMPTS 64
#define VANISHED_ATTEMPTS 16

/* Value entries read from one stretch of a log: n x (varint32 key_len | key | varint32
   val_len | val). Immutable once made; freed with its last reference. */
typedef struct log_seg {
  atomic_int refs;
  uint64_t n;
  size_t len;
  uint8_t data[];
} log_seg_t;

typedef struct log_state {
  uint64_t number;
  uint64_t resume; /* where the next read starts */
  log_seg_t **segs;
  size_t nsegs, cap;
  int seen;
} log_state_t;

typedef struct tbl {
  uint64_t number, size;
  uint64_t gone_epoch; /* 0 while listed; else the sync epoch that found it unlisted */
  uint64_t seen_ns;    /* when a sync first listed it */
  int indexed;         /* has a leaf in the value index */
  int deferred;        /* listed, not indexed yet: the background sync skipped it (young) */
  engine_leveldb_leaf_source_t source; /* where its leaf came from, once indexed */
  uint8_t *cache_buf; /* in-memory leaves: its cache file's bytes, not written yet */
  size_t cache_len;
} tbl_t;

/* What a sync is for: a view (reads the logs, indexes every listed table), a full sync
   (flush, open, engine_leveldb_sync: indexes every listed table, no logs), or the
   background (no logs; indexes only tables listed for BG_MIN_AGE_NS). */
enum { SYNC_VIEW, SYNC_FULL, SYNC_BG };

struct engine_view {
  engine_view_t *prev, *next; /* the active views */
  uint64_t epoch;
  leveldb_iterator_t *pin;
  engine_table_t *tables; /* sorted by number */
  size_t ntables;
  log_seg_t **segs;
  size_t nsegs;
};

typedef struct engine_leveldb {
  engine_t base;
  char *path, *cache_dir;
  lsm_io_t *io; /* bfh's own file accesses (borrowed; lsm_io_default() unless a test's) */
  int dir_fd;   /* holds flock(LOCK_EX) on the directory while open; -1 if none */
  leveldb_t *db;
  leveldb_options_t *options;
  leveldb_filterpolicy_t *policy;
  leveldb_readoptions_t *ropt, *pin_ropt;
  leveldb_writeoptions_t *wopt;

  pthread_mutex_t sync_mu; /* one sync at a time; guards everything down to stats */
  log_state_t *logs;
  size_t nlogs, logs_cap;
  tbl_t *tbls; /* sorted by number */
  size_t ntbls, tbls_cap;
  uint64_t epoch;
  char *last_list; /* leveldb.sstables at the last sync (malloc'd) */
  int pending_removals;
  engine_leveldb_stats_t stats;

  /* Held shared by every call that makes LevelDB write its log (put, delete, flush), taken
     exclusively by a log read that met a damaged-looking record: with it held no append is in
     flight, so what the read sees then is what the file holds (see refresh_logs). */
  pthread_rwlock_t write_lock;

  pthread_mutex_t diag_mu; /* guards the last corruption diagnosis */
  char diag_ldb[256];      /* LevelDB's message it was made for ("" if none) */
  char diag_msg[ERR_MSG_BYTES];

  pthread_mutex_t views_mu; /* guards the active view list */
  engine_view_t *views;

  pthread_mutex_t bg_mu;
  pthread_cond_t bg_cv;
  pthread_t bg;
  int bg_started, bg_stop;
} engine_leveldb_t;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void table_path(const char *dir, uint64_t number, char *out, size_t n);

static int ignore_entry(void *arg, const ldb_entry_t *e) {
  (void)arg, (void)e;
  return 0;
}

/* Which file a LevelDB Corruption status is about: LevelDB's messages for damaged table
   blocks ("block checksum mismatch", "bad block handle", "truncated block read", ...) name no
   file. Reads every listed table with bfh's own reader (every checksum verified, the size
   compared with the one LevelDB lists) and writes the first damage found, naming the file and
   offset, to out. Returns 0 when no listed table is damaged. The last answer is kept for the
   same LevelDB message: a damaged database fails many calls the same way. */
static int diagnose_corruption(engine_leveldb_t *el, const char *ldb_msg, char *out, size_t cap) {
  pthread_mutex_lock(&el->diag_mu);
  int found = el->diag_ldb[0] && strncmp(el->diag_ldb, ldb_msg, sizeof el->diag_ldb - 1) == 0;
  if (found) snprintf(out, cap, "%s", el->diag_msg);
  pthread_mutex_unlock(&el->diag_mu);
  if (found || !el->db) return found;
  char *list = leveldb_property_value(el->db, "leveldb.sstables");
  ldb_sstable_t *t = NULL;
  size_t n = 0;
  err_t e2;
  if (!list || ldb_sstables_parse(list, &t, &n, &e2) != BFH_OK) {
    leveldb_free(list);
    return 0;
  }
  leveldb_free(list);
  for (size_t i = 0; i < n && !found; i++) {
    char path[4200];
    table_path(el->path, t[i].number, path, sizeof path);
    struct stat sb;
    if (stat(path, &sb) == 0 && (uint64_t)sb.st_size != t[i].size) {
      snprintf(out, cap,
               "table %.400s: %llu bytes, but the MANIFEST says %llu (truncated or grown)", path,
               (unsigned long long)sb.st_size, (unsigned long long)t[i].size);
      found = 1;
    } else if (ldb_table_scan(el->io, path, ignore_entry, NULL, NULL, &e2) == BFH_E_CORRUPT) {
      snprintf(out, cap, "%s", e2.msg);
      found = 1;
    }
  }
  free(t);
  if (found) {
    pthread_mutex_lock(&el->diag_mu);
    snprintf(el->diag_ldb, sizeof el->diag_ldb, "%s", ldb_msg);
    snprintf(el->diag_msg, sizeof el->diag_msg, "%s", out);
    pthread_mutex_unlock(&el->diag_mu);
  }
  return found;
}

/* Maps a LevelDB error string to a status, sets err, frees msg. A Corruption is
   BFH_E_CORRUPT, its message naming the damaged file (diagnose_corruption). */
static int ldb_error(engine_leveldb_t *el, char *msg, const char *op, err_t *err) {
  int code = BFH_E_IO;
  if (!strncmp(msg, "Corruption", 10))
    code = BFH_E_CORRUPT;
  else if (!strncmp(msg, "Invalid argument", 16))
    code = BFH_E_INVALID;
  else if (!strncmp(msg, "Not implemented", 15))
    code = BFH_E_UNSUPPORTED;
  else if (!strncmp(msg, "IO error: lock ", 15))
    code = BFH_E_BUSY;
  char where[ERR_MSG_BYTES];
  if (code == BFH_E_BUSY)
    err_set(err, code, "%s: database is open in another process or handle (LevelDB: %s)", el->path,
            msg);
  else if (code == BFH_E_CORRUPT && diagnose_corruption(el, msg, where, sizeof where))
    err_set(err, code, "%s (leveldb %s: %s)", where, op, msg);
  else if (code == BFH_E_IO && (strstr(msg, ".ldb") || strstr(msg, ".sst")) &&
           diagnose_corruption(el, msg, where, sizeof where))
    /* A read past the end of a truncated table is an IO error to LevelDB ("Invalid
       argument" from its mmap reader): damage, when the table is not what LevelDB listed. */
    code = err_set(err, BFH_E_CORRUPT, "%s (leveldb %s: %s)", where, op, msg);
  else
    err_set(err, code, "%s: leveldb %s: %s", el->path, op, msg);
  leveldb_free(msg);
  return code;
}

/* ---- Log segments --------------------------------------------------------------------- */

static void seg_unref(log_seg_t *s) {
  if (s && atomic_fetch_sub(&s->refs, 1) == 1) free(s);
}

typedef struct seg_builder {
  uint8_t *p;
  size_t len, cap;
  uint64_t n;
  int nomem;
} seg_builder_t;

static int append_entry(void *arg, const ldb_entry_t *e) {
  seg_builder_t *b = arg;
  if (e->type != LDB_TYPE_VALUE) return 0;
  size_t need = b->len + 2 * VARINT32_MAX_BYTES + e->key_len + e->val_len;
  if (need > b->cap) {
    size_t c = b->cap ? b->cap : 65536;
    while (c < need) c *= 2;
    uint8_t *p = realloc(b->p, c);
    if (!p) {
      b->nomem = 1;
      return 1;
    }
    b->p = p;
    b->cap = c;
  }
  uint8_t *q = encode_varint32(b->p + b->len, (uint32_t)e->key_len);
  memcpy(q, e->key, e->key_len);
  q = encode_varint32(q + e->key_len, (uint32_t)e->val_len);
  memcpy(q, e->val, e->val_len);
  b->len = (size_t)(q + e->val_len - b->p);
  b->n++;
  return 0;
}

static void log_state_release(log_state_t *l) {
  for (size_t i = 0; i < l->nsegs; i++) seg_unref(l->segs[i]);
  free(l->segs);
}

/* Is name "<digits>.<suffix>"? Sets *num. */
static int parse_name(const char *name, const char *suffix, uint64_t *num) {
  const char *p = name;
  uint64_t x = 0;
  if (*p < '0' || *p > '9') return 0;
  while (*p >= '0' && *p <= '9') {
    if (x > UINT64_MAX / 10 - 1) return 0;
    x = x * 10 + (uint64_t)(*p++ - '0');
  }
  if (*p++ != '.' || strcmp(p, suffix) != 0) return 0;
  *num = x;
  return 1;
}

/* Step 1 of the sync: reads what was appended to every live log since the last sync. With
   read == 0 only forgets the logs that were deleted (their segments are freed). */
static int refresh_logs(engine_leveldb_t *el, int read, err_t *err) {
  DIR *d = opendir(el->path);
  if (!d) return err_errno(err, errno, "%s: list directory", el->path);
  for (size_t i = 0; i < el->nlogs; i++) el->logs[i].seen = 0;
  int rc = BFH_OK;
  struct dirent *de;
  u64vec_t nums;
  u64vec_init(&nums);
  while ((de = readdir(d))) {
    uint64_t num;
    if (parse_name(de->d_name, "log", &num) && u64vec_push(&nums, num) != BFH_OK) {
      rc = err_set(err, BFH_E_NOMEM, "%s: no memory to list logs", el->path);
      break;
    }
  }
  closedir(d);
  for (size_t j = 0; rc == BFH_OK && j < nums.n; j++) {
    log_state_t *l = NULL;
    for (size_t i = 0; i < el->nlogs; i++)
      if (el->logs[i].number == nums.v[j]) l = &el->logs[i];
    if (!l && !read) continue;
    if (!l) {
      if (el->nlogs == el->logs_cap) {
        size_t c = el->logs_cap ? 2 * el->logs_cap : 8;
        log_state_t *nl = realloc(el->logs, c * sizeof *nl);
        if (!nl) {
          rc = err_set(err, BFH_E_NOMEM, "%s: no memory for logs", el->path);
          break;
        }
        el->logs = nl;
        el->logs_cap = c;
      }
      l = &el->logs[el->nlogs++];
      memset(l, 0, sizeof *l);
      l->number = nums.v[j];
    }
    if (!read) {
      l->seen = 1;
      continue;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/%06llu.log", el->path, (unsigned long long)l->number);
    seg_builder_t b = {0};
    ldb_read_stats_t st = {0};
    uint64_t next = l->resume;
    int r = ldb_log_read(el->io, path, l->resume, append_entry, &b, &next, &st, err);
    if (r == BFH_E_CORRUPT) {
      /* A read racing LevelDB's append can see part of a write(2) (a record whose bytes are
         not all there yet: a false checksum mismatch). Read again with every writer held
         off: no append is in flight then, so damage seen now is in the file. */
      free(b.p);
      memset(&b, 0, sizeof b);
      next = l->resume;
      el->stats.log_rereads++;
      pthread_rwlock_wrlock(&el->write_lock);
      r = ldb_log_read(el->io, path, l->resume, append_entry, &b, &next, &st, err);
      pthread_rwlock_unlock(&el->write_lock);
    }
    el->stats.log_bytes += st.bytes_read;
    if (r == BFH_OK && b.nomem) r = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
    if (r == BFH_NOT_FOUND) { /* deleted since the listing: its table is installed */
      free(b.p);
      continue;
    }
    if (r != BFH_OK) {
      free(b.p);
      rc = r;
      break;
    }
    if (b.n > 0) {
      log_seg_t *s = malloc(sizeof *s + b.len);
      log_seg_t **ns =
          l->nsegs == l->cap ? realloc(l->segs, (l->cap ? 2 * l->cap : 8) * sizeof *ns) : l->segs;
      if (!s || !ns) {
        free(s);
        if (ns) l->segs = ns;
        free(b.p);
        rc = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
        break;
      }
      if (l->nsegs == l->cap) l->cap = l->cap ? 2 * l->cap : 8;
      l->segs = ns;
      atomic_init(&s->refs, 1);
      s->n = b.n;
      s->len = b.len;
      memcpy(s->data, b.p, b.len);
      l->segs[l->nsegs++] = s;
    }
    free(b.p);
    l->resume = next;
    l->seen = 1;
  }
  u64vec_release(&nums);
  if (rc != BFH_OK) return rc;
  size_t w = 0;
  for (size_t i = 0; i < el->nlogs; i++) {
    if (el->logs[i].seen)
      el->logs[w++] = el->logs[i];
    else
      log_state_release(&el->logs[i]);
  }
  el->nlogs = w;
  return BFH_OK;
}

/* ---- Tables --------------------------------------------------------------------------- */

/* Binary search of tbls[0, n). */
static tbl_t *find_tbl_in(engine_leveldb_t *el, size_t n, uint64_t number) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (el->tbls[mid].number < number)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && el->tbls[lo].number == number ? &el->tbls[lo] : NULL;
}

static tbl_t *find_tbl(engine_leveldb_t *el, uint64_t number) {
  return find_tbl_in(el, el->ntbls, number);
}

static int cmp_tbl(const void *a, const void *b) {
  uint64_t x = ((const tbl_t *)a)->number, y = ((const tbl_t *)b)->number;
  return x < y ? -1 : x > y;
}

/* The path of table `number`: NNNNNN.ldb, or NNNNNN.sst when only that exists. */
static void table_path(const char *dir, uint64_t number, char *out, size_t n) {
  snprintf(out, n, "%s/%06llu.ldb", dir, (unsigned long long)number);
  if (access(out, F_OK) != 0) {
    char alt[4200];
    snprintf(alt, sizeof alt, "%s/%06llu.sst", dir, (unsigned long long)number);
    if (access(alt, F_OK) == 0) snprintf(out, n, "%s", alt);
  }
}

static void cache_path(const engine_leveldb_t *el, uint64_t number, char *out, size_t n) {
  snprintf(out, n, "%s/%06llu.vf", el->cache_dir, (unsigned long long)number);
}

typedef struct new_leaves {
  size_t n;
  uint64_t *numbers;
  value_filter_t **filters;
  char **paths;
  uint64_t *offsets;
} new_leaves_t;

static void new_leaves_release(new_leaves_t *nl) {
  for (size_t i = 0; i < nl->n; i++) free(nl->paths[i]);
  free(nl->numbers);
  free(nl->filters);
  free(nl->paths);
  free(nl->offsets);
}

/* Writes the pending cache files (in-memory leaves) of the listed tables first listed at
   least ENGINE_LEVELDB_CACHE_DELAY_NS ago (all of them with force). A write that fails is not
   retried: the cache only makes a reopen faster. */
static void write_pending_caches(engine_leveldb_t *el, int force) {
  uint64_t now = force ? UINT64_MAX : now_ns();
  for (size_t i = 0; i < el->ntbls; i++) {
    tbl_t *t = &el->tbls[i];
    if (!t->cache_buf || t->gone_epoch ||
        (!force && now - t->seen_ns < ENGINE_LEVELDB_CACHE_DELAY_NS))
      continue;
    char cpath[4200];
    cache_path(el, t->number, cpath, sizeof cpath);
    err_t e2;
    (void)ldb_filter_cache_write(el->io, cpath, t->cache_buf, t->cache_len, &e2);
    free(t->cache_buf);
    t->cache_buf = NULL;
  }
}

/* Is a listed table deferred (and, with min_age, listed for at least min_age ns)? */
static int any_deferred(const engine_leveldb_t *el, uint64_t min_age) {
  uint64_t now = min_age ? now_ns() : 0;
  for (size_t i = 0; i < el->ntbls; i++) {
    const tbl_t *t = &el->tbls[i];
    if (t->deferred && !t->gone_epoch && (!min_age || now - t->seen_ns >= min_age)) return 1;
  }
  return 0;
}

/* Step 3: filters for the listed tables not indexed yet (SYNC_BG: a table listed for the
   first time is only recorded, deferred, and indexed by a sync at least BG_MIN_AGE_NS later
   if still listed then).
   *vanished is set when a listed table file does not exist (the list must be fetched
   again). */
static int index_new_tables(engine_leveldb_t *el, const ldb_sstable_t *t, size_t n, int mode,
                            int *vanished, err_t *err) {
  *vanished = 0;
  value_index_t *vi = el->base.index;
  const value_index_params_t *vp = vi ? value_index_params(vi) : NULL;
  new_leaves_t nl = {0};
  size_t fresh = 0, todo = 0;
  for (size_t i = 0; i < n; i++) {
    const tbl_t *tb = find_tbl(el, t[i].number);
    fresh += tb == NULL;
    todo += tb == NULL || tb->deferred;
  }
  if (todo == 0) return BFH_OK;
  nl.numbers = calloc(todo, sizeof *nl.numbers);
  nl.filters = calloc(todo, sizeof *nl.filters);
  nl.paths = calloc(todo, sizeof *nl.paths);
  nl.offsets = calloc(todo, sizeof *nl.offsets);
  size_t old_n = el->ntbls;
  if (el->ntbls + fresh > el->tbls_cap) {
    size_t c = el->tbls_cap ? el->tbls_cap : 64;
    while (c < el->ntbls + fresh) c *= 2;
    tbl_t *nt = realloc(el->tbls, c * sizeof *nt);
    if (nt) {
      el->tbls = nt;
      el->tbls_cap = c;
    }
  }
  int rc = BFH_OK, store_rc = BFH_OK; /* store_rc: a leaf's cache file not written */
  err_t store_err;
  err_clear(&store_err);
  if (!nl.numbers || !nl.filters || !nl.paths || !nl.offsets || el->ntbls + fresh > el->tbls_cap) {
    rc = err_set(err, BFH_E_NOMEM, "%s: no memory to index tables", el->path);
    goto out;
  }
  uint64_t now = now_ns();
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    tbl_t *tb = find_tbl_in(el, old_n, t[i].number); /* the sorted, old part */
    if (tb && !tb->deferred) continue;
    tbl_t nt = {.number = t[i].number, .size = t[i].size, .seen_ns = now};
    if (!vi) {
      el->tbls[el->ntbls++] = nt;
      continue;
    }
    if (!tb && mode == SYNC_BG) { /* young: it may be gone soon */
      nt.deferred = 1;
      el->tbls[el->ntbls++] = nt;
      continue;
    }
    if (tb && mode == SYNC_BG && now - tb->seen_ns < BG_MIN_AGE_NS) continue;
    if (tb) nt = *tb;
    nt.deferred = 0;
    char tpath[4200], cpath[4200];
    table_path(el->path, nt.number, tpath, sizeof tpath);
    cache_path(el, nt.number, cpath, sizeof cpath);
    value_filter_t *f = NULL;
    err_t e2;
    int r =
        ldb_filter_cache_load(el->io, cpath, nt.number, nt.size, vp->m, vp->k, vp->seed, &f, &e2);
    if (r == BFH_OK) {
      el->stats.tables_cached++;
      nt.source = ENGINE_LEVELDB_LEAF_CACHED;
      if (!vp->leaves_on_disk) cpath[0] = '\0';
    } else {
      if (r != BFH_NOT_FOUND)
        (void)lsm_io_unlink(el->io, cpath, NULL); /* stale or damaged: rebuild */
      uint64_t t0 = now_ns();
      ldb_read_stats_t st = {0};
      r = ldb_filter_build(el->io, tpath, vp->m, vp->k, vp->seed, &f, &st, &e2);
      el->stats.index_ns += now_ns() - t0;
      el->stats.index_bytes += st.bytes_read;
      if (r == BFH_NOT_FOUND) { /* a deferred one stays deferred (and is soon unlisted) */
        *vanished = 1;
        continue;
      }
      if (r == BFH_E_NOMEM) {
        rc = err_set(err, r, "%s", e2.msg);
        break;
      }
      if (r != BFH_OK) { /* unreadable: no leaf, always scanned */
        el->stats.tables_unreadable++;
        nt.source = ENGINE_LEVELDB_LEAF_UNREADABLE;
        snprintf(el->stats.last_unreadable, sizeof el->stats.last_unreadable, "%.255s", e2.msg);
        if (tb)
          *tb = nt;
        else
          el->tbls[el->ntbls++] = nt;
        continue;
      }
      if (vp->leaves_on_disk) { /* the leaf lives in the cache file: written first */
        r = ldb_filter_cache_store(el->io, cpath, nt.number, nt.size, f, &e2);
        if (r != BFH_OK) {
          /* No leaf: the table stays deferred, so every search scans it and the next sync
             tries again. A flush or an open reports the error; a search's sync does not (a
             full disk must not stop reads). */
          value_filter_destroy(f);
          el->stats.cache_write_failures++;
          nt.deferred = 1;
          nt.source = ENGINE_LEVELDB_LEAF_NONE;
          if (tb)
            *tb = nt;
          else
            el->tbls[el->ntbls++] = nt;
          if (mode == SYNC_FULL && store_rc == BFH_OK) {
            store_rc = r;
            store_err = e2;
          }
          continue;
        }
      }
      el->stats.tables_indexed++;
      nt.source = ENGINE_LEVELDB_LEAF_READ;
      if (!vp->leaves_on_disk) { /* the cache only speeds up a reopen: written if it lives on */
        if (ldb_filter_cache_encode(nt.number, nt.size, f, &nt.cache_buf, &nt.cache_len, &e2) !=
            BFH_OK)
          nt.cache_buf = NULL;
        cpath[0] = '\0';
      }
    }
    nl.numbers[nl.n] = nt.number;
    nl.filters[nl.n] = f;
    nl.paths[nl.n] = cpath[0] ? strdup(cpath) : NULL;
    nl.offsets[nl.n] = LDB_FILTER_CACHE_HEADER_BYTES;
    nl.n++;
    nt.indexed = 1;
    if (tb)
      *tb = nt;
    else
      el->tbls[el->ntbls++] = nt;
  }
  if (nl.n > 0) {
    /* Leaves not added (an error) stay without a leaf: always scanned. */
    size_t added = 0;
    int r = value_index_add_batch(vi, nl.n, nl.numbers, nl.filters, (const char *const *)nl.paths,
                                  nl.offsets, &added, err);
    for (size_t i = 0; i < nl.n; i++) nl.filters[i] = NULL; /* the batch owns them */
    if (r != BFH_OK && rc == BFH_OK) rc = r;
    if (added < nl.n) {
      for (size_t i = 0; i < el->ntbls; i++)
        if (el->tbls[i].indexed) el->tbls[i].indexed = value_index_contains(vi, el->tbls[i].number);
    }
  }
  if (rc == BFH_OK && store_rc != BFH_OK) rc = err_set(err, store_rc, "%s", store_err.msg);
out:
  for (size_t i = 0; i < nl.n; i++) value_filter_destroy(nl.filters[i]);
  new_leaves_release(&nl);
  if (el->ntbls > old_n) qsort(el->tbls, el->ntbls, sizeof *el->tbls, cmp_tbl);
  return rc;
}

static uint64_t min_view_epoch(engine_leveldb_t *el) {
  uint64_t m = UINT64_MAX;
  pthread_mutex_lock(&el->views_mu);
  for (engine_view_t *v = el->views; v; v = v->next)
    if (v->epoch < m) m = v->epoch;
  pthread_mutex_unlock(&el->views_mu);
  return m;
}

/* Step 4: drops the leaves of tables unlisted before every live view was taken. */
static void apply_removals(engine_leveldb_t *el) {
  if (!el->pending_removals) return;
  uint64_t min_epoch = min_view_epoch(el);
  size_t w = 0;
  int pending = 0;
  for (size_t i = 0; i < el->ntbls; i++) {
    tbl_t *t = &el->tbls[i];
    if (t->gone_epoch && t->gone_epoch <= min_epoch) {
      if (t->indexed) value_index_remove(el->base.index, t->number);
      if (t->cache_buf) { /* its cache file was never written */
        free(t->cache_buf);
      } else if (el->cache_dir) {
        char cpath[4200];
        cache_path(el, t->number, cpath, sizeof cpath);
        (void)lsm_io_unlink(el->io, cpath, NULL);
      }
      el->stats.tables_removed++;
      continue;
    }
    pending |= t->gone_epoch != 0;
    el->tbls[w++] = *t;
  }
  el->ntbls = w;
  el->pending_removals = pending;
}

/* Step 2: the live list with the version holding it pinned. On BFH_OK *list is malloc'd
   (leveldb_free) and *pin an iterator (leveldb_iter_destroy). */
static int pin_list(engine_leveldb_t *el, char **list, leveldb_iterator_t **pin, err_t *err) {
  char *a = leveldb_property_value(el->db, "leveldb.sstables");
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
      *list = a;
      *pin = it;
      return BFH_OK;
    }
    leveldb_iter_destroy(it);
  }
  leveldb_free(a);
  return err_set(err, BFH_E_IO, "%s: leveldb.sstables is not available", el->path);
}

static int cmp_table(const void *a, const void *b) {
  uint64_t x = ((const engine_table_t *)a)->number, y = ((const engine_table_t *)b)->number;
  return x < y ? -1 : x > y;
}

static void view_free(engine_view_t *v) {
  if (!v) return;
  if (v->pin) leveldb_iter_destroy(v->pin);
  for (size_t i = 0; i < v->nsegs; i++) seg_unref(v->segs[i]);
  free(v->segs);
  free(v->tables);
  free(v);
}

static engine_view_t *make_view(engine_leveldb_t *el, const ldb_sstable_t *t, size_t n,
                                leveldb_iterator_t *pin) {
  engine_view_t *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  size_t ns = 0;
  for (size_t i = 0; i < el->nlogs; i++) ns += el->logs[i].nsegs;
  v->tables = malloc((n ? n : 1) * sizeof *v->tables);
  v->segs = malloc((ns ? ns : 1) * sizeof *v->segs);
  if (!v->tables || !v->segs) {
    view_free(v);
    return NULL;
  }
  for (size_t i = 0; i < n; i++)
    v->tables[i] = (engine_table_t){.number = t[i].number, .size = t[i].size, .level = t[i].level};
  qsort(v->tables, n, sizeof *v->tables, cmp_table);
  v->ntables = n;
  for (size_t i = 0; i < el->nlogs; i++)
    for (size_t j = 0; j < el->logs[i].nsegs; j++) {
      log_seg_t *s = el->logs[i].segs[j];
      atomic_fetch_add(&s->refs, 1);
      v->segs[v->nsegs++] = s;
    }
  v->pin = pin;
  v->epoch = el->epoch;
  return v;
}

/* The emulated table-build hook; mode SYNC_VIEW (view != NULL) also makes a view. Holds
   sync_mu. */
static int sync_locked(engine_leveldb_t *el, int mode, engine_view_t **view, err_t *err) {
  el->stats.syncs++;
  if (mode == SYNC_BG) write_pending_caches(el, 0);
  int rc = BFH_OK;
  if (mode == SYNC_VIEW) { /* only a view needs the logs' entries */
    rc = refresh_logs(el, 1, err);
    if (rc != BFH_OK) return rc;
  }
  int deferred = any_deferred(el, mode == SYNC_BG ? BG_MIN_AGE_NS : 0);
  if (mode == SYNC_BG && el->last_list && !el->pending_removals && !deferred) {
    /* Background: nothing to do while the list is unchanged. */
    char *cur = leveldb_property_value(el->db, "leveldb.sstables");
    int same = cur && strcmp(cur, el->last_list) == 0;
    leveldb_free(cur);
    if (same) return BFH_OK;
  }
  if (mode != SYNC_VIEW && el->nlogs > 0) {
    rc = refresh_logs(el, 0, err); /* frees the segments of deleted logs */
    if (rc != BFH_OK) return rc;
  }
  char *list = NULL;
  leveldb_iterator_t *pin = NULL;
  ldb_sstable_t *t = NULL;
  size_t n = 0;
  int vanished = 0;
  for (int attempt = 0;; attempt++) {
    rc = pin_list(el, &list, &pin, err);
    if (rc != BFH_OK) return rc;
    rc = ldb_sstables_parse(list, &t, &n, err);
    vanished = 0;
    if (rc == BFH_OK && (deferred || !el->last_list || strcmp(list, el->last_list) != 0))
      rc = index_new_tables(el, t, n, mode, &vanished, err);
    if (rc != BFH_OK || !vanished || attempt == VANISHED_ATTEMPTS) break;
    leveldb_iter_destroy(pin);
    leveldb_free(list);
    free(t);
  }
  if (rc == BFH_OK) {
    el->epoch++;

    /* Mark the tables that left the list (listed numbers sorted for a merge). */
    uint64_t *listed = malloc((n ? n : 1) * sizeof *listed);
    if (!listed) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", el->path);
    for (size_t i = 0; listed && i < n; i++) listed[i] = t[i].number;
    if (listed) qsort(listed, n, sizeof *listed, u64_compare);
    for (size_t i = 0, j = 0; listed && i < el->ntbls; i++) {
      tbl_t *tb = &el->tbls[i];
      while (j < n && listed[j] < tb->number) j++;
      if (tb->gone_epoch) continue;
      if (j == n || listed[j] != tb->number) {
        tb->gone_epoch = el->epoch;
        el->pending_removals = 1;
      }
    }
    free(listed);
    /* A listed table that kept vanishing is not indexed: the next sync must try again. */
    leveldb_free(el->last_list);
    el->last_list = vanished ? NULL : list;
    if (!vanished) list = NULL;
    if (rc == BFH_OK && view) {
      engine_view_t *v = make_view(el, t, n, pin);
      if (!v) {
        rc = err_set(err, BFH_E_NOMEM, "%s: no memory for a view", el->path);
      } else {
        pin = NULL;
        pthread_mutex_lock(&el->views_mu);
        v->next = el->views;
        if (el->views) el->views->prev = v;
        el->views = v;
        pthread_mutex_unlock(&el->views_mu);
        *view = v;
      }
    }
    apply_removals(el);
  }
  if (pin) leveldb_iter_destroy(pin);
  leveldb_free(list);
  free(t);
  return rc;
}

static int run_sync(engine_leveldb_t *el, int mode, engine_view_t **view, err_t *err) {
  pthread_mutex_lock(&el->sync_mu);
  int rc = sync_locked(el, mode, view, err);
  pthread_mutex_unlock(&el->sync_mu);
  return rc;
}

static void *bg_main(void *arg) {
  engine_leveldb_t *el = arg;
  pthread_mutex_lock(&el->bg_mu);
  while (!el->bg_stop) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t = (uint64_t)ts.tv_nsec + BG_PERIOD_NS;
    ts.tv_sec += (time_t)(t / 1000000000ull);
    ts.tv_nsec = (long)(t % 1000000000ull);
    pthread_cond_timedwait(&el->bg_cv, &el->bg_mu, &ts);
    if (el->bg_stop) break;
    pthread_mutex_unlock(&el->bg_mu);
    err_t err;
    run_sync(el, SYNC_BG, NULL, &err); /* a failure is seen (and reported) by the next search */
    pthread_mutex_lock(&el->bg_mu);
  }
  pthread_mutex_unlock(&el->bg_mu);
  return NULL;
}

/* ---- engine_ops ------------------------------------------------------------------------ */

static int e_close(engine_t *e) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  if (!el) return BFH_OK;
  if (el->bg_started) {
    pthread_mutex_lock(&el->bg_mu);
    el->bg_stop = 1;
    pthread_cond_signal(&el->bg_cv);
    pthread_mutex_unlock(&el->bg_mu);
    pthread_join(el->bg, NULL);
  }
  if (el->cache_dir) write_pending_caches(el, 1); /* the live tables' cache files */
  for (size_t i = 0; i < el->ntbls; i++) free(el->tbls[i].cache_buf);
  if (el->db) leveldb_close(el->db);
  if (el->dir_fd >= 0) close(el->dir_fd); /* releases the flock */
  if (el->options) leveldb_options_destroy(el->options);
  if (el->policy) leveldb_filterpolicy_destroy(el->policy);
  if (el->ropt) leveldb_readoptions_destroy(el->ropt);
  if (el->pin_ropt) leveldb_readoptions_destroy(el->pin_ropt);
  if (el->wopt) leveldb_writeoptions_destroy(el->wopt);
  for (size_t i = 0; i < el->nlogs; i++) log_state_release(&el->logs[i]);
  free(el->logs);
  free(el->tbls);
  leveldb_free(el->last_list);
  pthread_mutex_destroy(&el->sync_mu);
  pthread_mutex_destroy(&el->views_mu);
  pthread_mutex_destroy(&el->diag_mu);
  pthread_rwlock_destroy(&el->write_lock);
  pthread_mutex_destroy(&el->bg_mu);
  pthread_cond_destroy(&el->bg_cv);
  free(el->path);
  free(el->cache_dir);
  free(el);
  return BFH_OK;
}

static int e_put(engine_t *e, const void *key, size_t key_len, const void *val, size_t val_len,
                 err_t *err) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  char *msg = NULL;
  pthread_rwlock_rdlock(&el->write_lock);
  leveldb_put(el->db, el->wopt, key, key_len, val, val_len, &msg);
  pthread_rwlock_unlock(&el->write_lock);
  return msg ? ldb_error(el, msg, "put", err) : BFH_OK;
}

static int e_del(engine_t *e, const void *key, size_t key_len, err_t *err) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  char *msg = NULL;
  pthread_rwlock_rdlock(&el->write_lock);
  leveldb_delete(el->db, el->wopt, key, key_len, &msg);
  pthread_rwlock_unlock(&el->write_lock);
  return msg ? ldb_error(el, msg, "delete", err) : BFH_OK;
}

static int e_get(engine_t *e, const void *key, size_t key_len, void **val, size_t *val_len,
                 err_t *err) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  char *msg = NULL;
  size_t n = 0;
  /* leveldb_get returns malloc'd memory (LevelDB's CopyString); bfh_free is free(). */
  char *v = leveldb_get(el->db, el->ropt, key, key_len, &n, &msg);
  if (msg) {
    leveldb_free(v);
    return ldb_error(el, msg, "get", err);
  }
  if (!v) return BFH_NOT_FOUND;
  if (n == 0) { /* malloc(0) may be any pointer: give a real one */
    leveldb_free(v);
    v = malloc(1);
    if (!v) return err_set(err, BFH_E_NOMEM, "%s: get: no memory", el->path);
  }
  *val = v;
  *val_len = n;
  return BFH_OK;
}

static int e_flush(engine_t *e, err_t *err) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  char *msg = NULL;
  pthread_rwlock_rdlock(&el->write_lock);
  leveldb_compact_range(el->db, "", 0, "", 0); /* see the top of this file */
  /* compact_range returns no status: a memtable that could not be written (a full disk, a
     damaged input) is LevelDB's background error, which its next write returns. An empty
     batch is such a write (it appends a 12-byte record with no entries to the log). */
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  leveldb_write(el->db, el->wopt, b, &msg);
  leveldb_writebatch_destroy(b);
  pthread_rwlock_unlock(&el->write_lock);
  if (msg) return ldb_error(el, msg, "flush (memtable to table)", err);
  return run_sync(el, SYNC_FULL, NULL, err);
}

static int e_view_acquire(engine_t *e, engine_view_t **view, err_t *err) {
  return run_sync((engine_leveldb_t *)e, SYNC_VIEW, view, err);
}

static void e_view_release(engine_t *e, engine_view_t *v) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  if (!v) return;
  pthread_mutex_lock(&el->views_mu);
  if (v->prev)
    v->prev->next = v->next;
  else
    el->views = v->next;
  if (v->next) v->next->prev = v->prev;
  pthread_mutex_unlock(&el->views_mu);
  view_free(v);
}

static size_t e_view_tables(const engine_view_t *v, const engine_table_t **tables) {
  *tables = v->tables;
  return v->ntables;
}

typedef struct match {
  const void *val;
  size_t val_len;
  engine_match_fn fn;
  void *arg;
  int stopped;
} match_t;

static int visit_match(void *arg, const ldb_entry_t *e) {
  match_t *m = arg;
  if (e->type != LDB_TYPE_VALUE || e->val_len != m->val_len ||
      (m->val_len && memcmp(e->val, m->val, m->val_len) != 0))
    return 0;
  if (m->fn(m->arg, e->key, e->key_len)) m->stopped = 1;
  return m->stopped;
}

/* A number not in the view is not part of its state (a table made after the view was
   taken): nothing is reported for it. */
static int e_scan_table(engine_t *e, engine_view_t *v, uint64_t number, const void *val,
                        size_t val_len, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                        err_t *err) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  engine_table_t key = {.number = number};
  if (!bsearch(&key, v->tables, v->ntables, sizeof *v->tables, cmp_table)) return BFH_OK;
  char path[4200];
  table_path(el->path, number, path, sizeof path);
  match_t m = {val, val_len, fn, arg, 0};
  ldb_read_stats_t rs = {0};
  int rc = ldb_table_scan(el->io, path, visit_match, &m, &rs, err);
  if (st) {
    st->entries += rs.entries;
    st->bytes_read += rs.bytes_read;
  }
  if (rc == BFH_NOT_FOUND)
    rc = err_set(err, BFH_E_IO, "table %s: listed in the live version but deleted under the search",
                 path);
  return rc;
}

static int e_scan_memtables(engine_t *e, engine_view_t *v, const void *val, size_t val_len,
                            engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err) {
  (void)e;
  (void)err;
  for (size_t i = 0; i < v->nsegs; i++) {
    const log_seg_t *s = v->segs[i];
    const uint8_t *p = s->data, *end = s->data + s->len;
    if (st) st->entries += s->n;
    while (p < end) { /* written by append_entry: well formed */
      uint32_t kl = 0, vl = 0;
      p = decode_varint32(p, end, &kl);
      const uint8_t *k = p;
      p = decode_varint32(p + kl, end, &vl);
      if (vl == val_len && (vl == 0 || memcmp(p, val, vl) == 0) && fn(arg, k, kl)) return BFH_OK;
      p += vl;
    }
  }
  return BFH_OK;
}

static const engine_ops_t leveldb_ops = {
    .name = "leveldb",
    .close = e_close,
    .put = e_put,
    .del = e_del,
    .get = e_get,
    .flush = e_flush,
    .view_acquire = e_view_acquire,
    .view_release = e_view_release,
    .view_tables = e_view_tables,
    .scan_table = e_scan_table,
    .scan_memtables = e_scan_memtables,
};

/* ---- Opening --------------------------------------------------------------------------- */

/* What a directory must hold before LevelDB may open or create a database in it. */
static int check_directory(const char *path, int create, err_t *err) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    if (errno != ENOENT) return err_errno(err, errno, "%s: stat", path);
    if (!create)
      return err_set(err, BFH_E_INVALID, "%s: does not exist (create_if_missing is off)", path);
    return BFH_OK;
  }
  if (!S_ISDIR(sb.st_mode)) return err_set(err, BFH_E_INVALID, "%s: not a directory", path);
  char cur[4200];
  /* The own engine's marker (lsm/filename.h): its directory also has a CURRENT and a
     MANIFEST, which LevelDB would take for damaged files of its own (and write a LOG). */
  snprintf(cur, sizeof cur, "%s/IDENTITY", path);
  if (access(cur, F_OK) == 0)
    return err_set(err, BFH_E_INVALID,
                   "%s: a bfh own-engine (BFH_ENGINE_LSM) database (it has an IDENTITY file), not "
                   "a LevelDB one",
                   path);
  snprintf(cur, sizeof cur, "%s/CURRENT", path);
  if (access(cur, F_OK) == 0) return BFH_OK;
  DIR *d = opendir(path);
  if (!d) return err_errno(err, errno, "%s: list directory", path);
  struct dirent *de;
  const char *other = NULL;
  while ((de = readdir(d)) && !other) {
    const char *n = de->d_name;
    /* bfh's own files, and what a LevelDB create that failed early leaves. */
    if (!strcmp(n, ".") || !strcmp(n, "..") || !strncmp(n, "BFH-", 4) || !strncmp(n, "bfh-", 4) ||
        !strcmp(n, "LOCK") || !strcmp(n, "LOG") || !strcmp(n, "LOG.old"))
      continue;
    other = n;
  }
  int rc = BFH_OK;
  if (other)
    rc = err_set(err, BFH_E_INVALID,
                 "%s: not a LevelDB database (no CURRENT file, and it holds other files such "
                 "as '%s')",
                 path, other);
  else if (!create)
    rc = err_set(err, BFH_E_INVALID,
                 "%s: not a LevelDB database (no CURRENT file; create_if_missing is off)", path);
  closedir(d);
  return rc;
}

/* Deletes the cache files of tables that are not live (and leftover temporary files). */
static void clean_cache(engine_leveldb_t *el) {
  DIR *d = opendir(el->cache_dir);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d))) {
    uint64_t num;
    int keep = parse_name(de->d_name, "vf", &num) && find_tbl(el, num) != NULL;
    if (keep || de->d_name[0] == '.') continue;
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", el->cache_dir, de->d_name);
    (void)lsm_io_unlink(el->io, p, NULL);
  }
  closedir(d);
}

int engine_leveldb_open(const char *path, const bfh_options *opt, value_index_t *index,
                        engine_t **out, err_t *err) {
  return engine_leveldb_open_io(path, opt, NULL, index, out, err);
}

int engine_leveldb_open_io(const char *path, const bfh_options *opt, struct lsm_io *io,
                           value_index_t *index, engine_t **out, err_t *err) {
  int rc = check_directory(path, opt->create_if_missing, err);
  if (rc != BFH_OK) return rc;
  engine_leveldb_t *el = calloc(1, sizeof *el);
  if (!el) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  el->io = io ? io : lsm_io_default();
  el->base.ops = &leveldb_ops;
  el->base.index = index;
  el->dir_fd = -1;
  pthread_mutex_init(&el->sync_mu, NULL);
  pthread_mutex_init(&el->views_mu, NULL);
  pthread_mutex_init(&el->diag_mu, NULL);
  pthread_rwlockattr_t ra;
  pthread_rwlockattr_init(&ra);
  /* A log read that waits for the writers must not wait behind a stream of new ones. */
  pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&el->write_lock, &ra);
  pthread_rwlockattr_destroy(&ra);
  pthread_mutex_init(&el->bg_mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&el->bg_cv, &ca);
  pthread_condattr_destroy(&ca);
  el->path = strdup(path);
  if (!el->path) {
    e_close(&el->base);
    return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  }
  /* Our own lock before LevelDB's: a failed leveldb_open of a database this process already
     holds closes its LOCK file descriptor, which drops the process's fcntl lock on it
     (POSIX record locks belong to the process), so a second open in this process must never
     reach leveldb_open. flock on the directory conflicts between any two opens. */
  if (opt->create_if_missing && (rc = lsm_io_mkdir(el->io, path, err)) != BFH_OK) {
    e_close(&el->base);
    return rc;
  }
  el->dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (el->dir_fd < 0) {
    rc = err_errno(err, errno, "%s: open directory", path);
    e_close(&el->base);
    return rc;
  }
  if (flock(el->dir_fd, LOCK_EX | LOCK_NB) != 0) {
    rc = errno == EWOULDBLOCK
             ? err_set(err, BFH_E_BUSY, "%s: database is open in another process or handle", path)
             : err_errno(err, errno, "%s: lock directory", path);
    e_close(&el->base);
    return rc;
  }
  el->options = leveldb_options_create();
  leveldb_options_set_create_if_missing(el->options, opt->create_if_missing != 0);
  if (opt->memtable_bytes) leveldb_options_set_write_buffer_size(el->options, opt->memtable_bytes);
  if (opt->table_bytes) leveldb_options_set_max_file_size(el->options, opt->table_bytes);
  leveldb_options_set_compression(el->options, leveldb_snappy_compression);
  /* Damage is an error, never a silent loss: paranoid_checks makes a damaged log record fail
     the open (instead of being skipped) and checks the blocks a table open and a compaction
     read; verify_checksums checks every block a get or an iterator reads (without it a
     damaged data block can answer a get wrongly, or trip an assertion inside LevelDB). */
  leveldb_options_set_paranoid_checks(el->options, 1);
  int bits = opt->key_bits_per_key > 0 ? (int)(opt->key_bits_per_key + 0.5) : 10;
  el->policy = leveldb_filterpolicy_create_bloom(bits);
  leveldb_options_set_filter_policy(el->options, el->policy);
  el->ropt = leveldb_readoptions_create();
  leveldb_readoptions_set_verify_checksums(el->ropt, 1);
  el->pin_ropt = leveldb_readoptions_create();
  leveldb_readoptions_set_verify_checksums(el->pin_ropt, 1);
  leveldb_readoptions_set_fill_cache(el->pin_ropt, 0);
  el->wopt = leveldb_writeoptions_create();
  leveldb_writeoptions_set_sync(el->wopt, opt->sync != 0);
  /* What LevelDB's recovery would accept silently or report without a file name. */
  rc = ldb_precheck_dir(el->io, path, err);
  if (rc != BFH_OK) {
    e_close(&el->base);
    return rc;
  }
  char *msg = NULL;
  el->db = leveldb_open(el->options, path, &msg);
  if (msg) {
    rc = ldb_error(el, msg, "open", err);
    el->db = NULL;
    e_close(&el->base);
    return rc;
  }
  if (index) {
    size_t n = strlen(path) + sizeof("/" LDB_FILTER_CACHE_DIR);
    el->cache_dir = malloc(n);
    if (!el->cache_dir) {
      e_close(&el->base);
      return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
    }
    snprintf(el->cache_dir, n, "%s/%s", path, LDB_FILTER_CACHE_DIR);
    rc = lsm_io_mkdir(el->io, el->cache_dir, err);
    if (rc != BFH_OK) {
      e_close(&el->base);
      return rc;
    }
  }
  rc = run_sync(el, SYNC_FULL, NULL, err); /* index every live table now */
  if (rc != BFH_OK) {
    e_close(&el->base);
    return rc;
  }
  if (el->cache_dir) clean_cache(el);
  /* Without an index there is nothing to do in the background (logs are read by views). */
  if (index && pthread_create(&el->bg, NULL, bg_main, el) != 0) {
    e_close(&el->base);
    return err_set(err, BFH_E_IO, "%s: cannot start the indexing thread", path);
  }
  el->bg_started = index != NULL;
  *out = &el->base;
  return BFH_OK;
}

void engine_leveldb_get_stats(engine_t *e, engine_leveldb_stats_t *st) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  pthread_mutex_lock(&el->sync_mu);
  *st = el->stats;
  pthread_mutex_unlock(&el->sync_mu);
}

engine_leveldb_leaf_source_t engine_leveldb_leaf_source(engine_t *e, uint64_t number) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  pthread_mutex_lock(&el->sync_mu);
  const tbl_t *t = find_tbl(el, number);
  engine_leveldb_leaf_source_t s = t && !t->gone_epoch ? t->source : ENGINE_LEVELDB_LEAF_NONE;
  pthread_mutex_unlock(&el->sync_mu);
  return s;
}

int engine_leveldb_sync(engine_t *e, err_t *err) {
  return run_sync((engine_leveldb_t *)e, SYNC_FULL, NULL, err);
}

int engine_leveldb_repair(const char *path, err_t *err) {
  leveldb_options_t *o = leveldb_options_create();
  if (!o) return err_set(err, BFH_E_NOMEM, "%s: out of memory", path);
  char *lerr = NULL;
  leveldb_repair_db(o, path, &lerr);
  leveldb_options_destroy(o);
  if (!lerr) return BFH_OK;
  int rc = err_set(err, BFH_E_IO, "%s: LevelDB repair: %s", path, lerr);
  leveldb_free(lerr);
  return rc;
}
