/* lsm_repair: salvage every intact log record and table block, rewrite them as one sorted
 * run, and write a manifest naming exactly that (lsm/repair.h).
 */
#include "lsm/repair.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/filename.h"
#include "lsm/internal_key.h"
#include "lsm/iterator.h"
#include "lsm/log.h"
#include "lsm/memtable.h"
#include "lsm/table.h"
#include "lsm/table_builder.h"
#include "lsm/version_set.h"
#include "lsm/write_batch.h"
#include "util/path.h"
#include "util/vec.h"

#define LOST_DIR "lost"

typedef struct repair {
  const char *dir;
  env_t *io;
  const lsm_options_t *opt;
  lsm_repair_stats_t st;
  uint64_t next_file; /* above every file number in the directory */
  uint64_t max_seq;
  iterator_t **srcs; /* the merge's inputs (owned until handed to the merge) */
  size_t nsrc, capsrc;
  u64vec_t tables, logs, manifests; /* what the directory holds */
  char **damaged;                   /* names of files to move to lost/ (owned) */
  size_t ndamaged;
  u64vec_t written; /* tables written by the repair (unlinked if it fails) */
  lsm_version_edit_t edit;
} repair_t;

static int add_source(repair_t *r, iterator_t *it, err_t *err) {
  if (it && r->nsrc == r->capsrc) {
    size_t c = r->capsrc ? 2 * r->capsrc : 16;
    iterator_t **a = realloc(r->srcs, c * sizeof *a);
    if (!a) {
      iterator_destroy(it);
      it = NULL;
    } else {
      r->srcs = a;
      r->capsrc = c;
    }
  }
  if (!it) return err_set(err, ST_E_NOMEM, "repair: out of memory");
  r->srcs[r->nsrc++] = it;
  return ST_OK;
}

static int note_damaged(repair_t *r, const char *name, err_t *err) {
  char **a = realloc(r->damaged, (r->ndamaged + 1) * sizeof *a);
  if (!a || !(a[r->ndamaged] = strdup(name))) {
    if (a) r->damaged = a;
    return err_set(err, ST_E_NOMEM, "repair: out of memory");
  }
  r->damaged = a;
  r->ndamaged++;
  return ST_OK;
}

/* ---- Step 1: logs ------------------------------------------------------------------ */

static int batch_ok(void *arg, uint64_t seq, int type, const void *key, size_t klen,
                    const void *val, size_t vlen) {
  (void)type, (void)key, (void)klen, (void)val, (void)vlen;
  repair_t *r = arg;
  if (seq > r->max_seq) r->max_seq = seq;
  return 0;
}

/* Replays the log at path into a memtable of its own, skipping damaged records. */
static int repair_log_at(repair_t *r, const char *path, err_t *err) {
  log_reader_t *lr = NULL;
  int rc = log_reader_open(r->io, path, &lr, err);
  if (rc != ST_OK) return rc;
  memtable_t *mem = memtable_create();
  if (!mem) {
    log_reader_close(lr);
    return err_set(err, ST_E_NOMEM, "repair: out of memory");
  }
  uint64_t dropped = 0;
  for (;;) {
    const void *data;
    size_t n;
    err_t e;
    rc = log_reader_next(lr, &data, &n, &e);
    if (rc == ST_NOT_FOUND) {
      dropped += log_reader_dropped_bytes(lr);
      rc = ST_OK;
      break;
    }
    if (rc == ST_E_CORRUPT) {
      dropped += log_reader_skip_damage(lr);
      continue;
    }
    if (rc != ST_OK) {
      *err = e;
      break;
    }
    if (write_batch_iterate(data, n, batch_ok, r, &e) != ST_OK) { /* a malformed batch */
      dropped += n;
      continue;
    }
    if ((rc = write_batch_insert(data, n, mem, err)) != ST_OK) break;
    r->st.log_records++;
  }
  log_reader_close(lr);
  r->st.logs++;
  r->st.log_bytes_dropped += dropped;
  if (rc == ST_OK && dropped) rc = note_damaged(r, strrchr(path, '/') + 1, err);
  if (rc == ST_OK) rc = add_source(r, memtable_iterator_create(mem), err);
  memtable_unref(mem);
  return rc;
}

/* ---- Step 2: tables ---------------------------------------------------------------- */

static int salvage_entry(void *arg, const uint8_t *ikey, size_t iklen, const uint8_t *val,
                         size_t vlen) {
  internal_key_parts_t k;
  if (internal_key_parse(ikey, iklen, &k)) return 0; /* table_salvage checked it */
  return memtable_add(arg, k.seq, k.type, k.user_key, k.user_len, val, vlen) != ST_OK;
}

static int repair_log(repair_t *r, uint64_t number, err_t *err) {
  char *path = lsm_filename_log(r->dir, number);
  if (!path) return err_set(err, ST_E_NOMEM, "repair: out of memory");
  int rc = repair_log_at(r, path, err);
  free(path);
  return rc;
}

/* An intact table (at path) is read in place by the merge; a damaged one has its good
   blocks copied into a memtable; one that cannot be opened is lost. */
static int repair_table_at(repair_t *r, uint64_t number, const char *path, err_t *err) {
  const char *name = strrchr(path, '/') + 1;
  r->st.tables++;
  table_t *t = NULL;
  err_t e;
  int rc = table_open(r->io, path, number, &t, &e);
  if (rc == ST_E_NOMEM) return err_set(err, rc, "%s", e.msg);
  if (rc != ST_OK) {
    r->st.tables_lost++;
    return note_damaged(r, name, err);
  }
  uint64_t bad = 0;
  (void)table_salvage(t, NULL, NULL, &bad);
  if (bad == 0) {
    rc = add_source(r, table_iterator_create(t), err); /* the iterator holds a reference */
    table_unref(t);
    return rc;
  }
  r->st.tables_damaged++;
  r->st.blocks_dropped += bad;
  memtable_t *mem = memtable_create();
  if (!mem || table_salvage(t, salvage_entry, mem, &bad) != 0)
    rc = err_set(err, ST_E_NOMEM, "repair: out of memory");
  table_unref(t);
  if (rc == ST_OK) rc = note_damaged(r, name, err);
  if (rc == ST_OK) rc = add_source(r, memtable_iterator_create(mem), err);
  memtable_unref(mem);
  return rc;
}

static int repair_table(repair_t *r, uint64_t number, err_t *err) {
  char *path = table_file_path(r->dir, number);
  if (!path) return err_set(err, ST_E_NOMEM, "repair: out of memory");
  int rc = repair_table_at(r, number, path, err);
  free(path);
  return rc;
}

/* ---- Step 3: one sorted run ---------------------------------------------------------- */

static int finish_table(repair_t *r, table_builder_t *tb, uint64_t number, err_t *err) {
  int rc = table_builder_finish(tb, err);
  if (rc == ST_OK) {
    size_t sl, ll;
    const uint8_t *s = table_builder_smallest(tb, &sl), *l = table_builder_largest(tb, &ll);
    rc = lsm_version_edit_add_table(&r->edit, LSM_NUM_LEVELS - 1, number,
                                    table_builder_file_size(tb), s, sl, l, ll,
                                    table_builder_max_seq(tb));
    if (rc != ST_OK) rc = err_set(err, rc, "repair: out of memory");
    r->st.tables_out++;
  }
  table_builder_destroy(tb);
  return rc;
}

/* Merges every source by internal key and writes the newest version of each live key. */
static int write_run(repair_t *r, err_t *err) {
  iterator_t *it = merging_iterator_create(r->srcs, r->nsrc);
  r->nsrc = 0; /* the merge owns them now (or destroyed them) */
  if (!it) return err_set(err, ST_E_NOMEM, "repair: out of memory");
  table_builder_options_t topt;
  table_builder_options_init(&topt);
  topt.block_bytes = r->opt->block_bytes;
  topt.key_bits_per_key = r->opt->key_bits_per_key;
  topt.hook = r->opt->hook;
  uint8_t *prev = NULL;
  size_t prev_len = 0, prev_cap = 0;
  int have_prev = 0, rc = ST_OK;
  table_builder_t *tb = NULL;
  uint64_t tnum = 0;
  for (iterator_seek_first(it); rc == ST_OK && iterator_valid(it); iterator_next(it)) {
    size_t iklen, vlen;
    const void *ikey = iterator_key(it, &iklen), *val = iterator_value(it, &vlen);
    internal_key_parts_t k;
    if (internal_key_parse(ikey, iklen, &k)) continue; /* the sources checked every key */
    r->st.entries_in++;
    if (k.seq > r->max_seq) r->max_seq = k.seq;
    if (have_prev && bytewise_compare(k.user_key, k.user_len, prev, prev_len) == 0)
      continue; /* an older version (newest first in internal order) */
    if (k.user_len > prev_cap) {
      uint8_t *p = realloc(prev, k.user_len);
      if (!p) {
        rc = err_set(err, ST_E_NOMEM, "repair: out of memory");
        break;
      }
      prev = p;
      prev_cap = k.user_len;
    }
    memcpy(prev, k.user_key, k.user_len);
    prev_len = k.user_len;
    have_prev = 1;
    if (k.type == LSM_TYPE_DELETION) continue; /* nothing older survives the run */
    if (!tb) {
      tnum = r->next_file++;
      char *path = table_file_path(r->dir, tnum);
      if (!path || (rc = u64vec_push(&r->written, tnum)) != ST_OK) {
        free(path);
        rc = err_set(err, ST_E_NOMEM, "repair: out of memory");
        break;
      }
      rc = table_builder_create(r->io, path, tnum, &topt, &tb, err);
      free(path);
      if (rc != ST_OK) break;
    }
    if ((rc = table_builder_add(tb, ikey, iklen, val, vlen, err)) != ST_OK) break;
    r->st.keys_out++;
    if (table_builder_file_size(tb) >= r->opt->table_bytes) {
      rc = finish_table(r, tb, tnum, err);
      tb = NULL;
    }
  }
  if (rc == ST_OK) rc = iterator_status(it, err);
  if (rc == ST_OK && tb)
    rc = finish_table(r, tb, tnum, err);
  else
    table_builder_destroy(tb);
  iterator_destroy(it);
  free(prev);
  return rc;
}

/* ---- Step 4: the new manifest ----------------------------------------------------------- */

static int write_manifest(repair_t *r, err_t *err) {
  uint64_t log_number = r->next_file++;
  char *path = lsm_filename_log(r->dir, log_number);
  if (!path) return err_set(err, ST_E_NOMEM, "repair: out of memory");
  log_writer_t *w = NULL;
  int rc = log_writer_open(r->io, path, &w, err);
  free(path);
  if (rc == ST_OK) rc = log_writer_sync(w, err);
  int crc = log_writer_close(w, err);
  if (rc == ST_OK) rc = crc;
  if (rc != ST_OK) return rc;
  lsm_version_set_t *vs = NULL;
  rc = lsm_version_set_create(r->dir, r->io, r->opt->level1_bytes, &vs, err);
  if (rc != ST_OK) return rc;
  vs->next_file = r->next_file;
  vs->last_sequence = r->max_seq;
  vs->log_number = log_number;
  lsm_version_edit_set_log_number(&r->edit, log_number);
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&mu);
  rc = lsm_version_set_log_and_apply(vs, &r->edit, &mu, err);
  pthread_mutex_unlock(&mu);
  lsm_version_set_destroy(vs);
  return rc;
}

/* Moves the damaged files, and the manifests the new one replaces, into dir/lost/. */
static int move_to_lost(repair_t *r, err_t *err) {
  char *lost = path_join(r->dir, LOST_DIR);
  if (!lost) return err_set(err, ST_E_NOMEM, "repair: out of memory");
  int rc = ST_OK;
  for (size_t i = 0; i < r->manifests.n && rc == ST_OK; i++) {
    char name[32];
    snprintf(name, sizeof name, "MANIFEST-%06" PRIu64, r->manifests.v[i]);
    rc = note_damaged(r, name, err);
  }
  if (rc == ST_OK && r->ndamaged) rc = env_mkdir(r->io, lost, err);
  for (size_t i = 0; i < r->ndamaged && rc == ST_OK; i++) {
    char *from = path_join(r->dir, r->damaged[i]), *to = path_join(lost, r->damaged[i]);
    rc = from && to ? env_rename(r->io, from, to, err)
                    : err_set(err, ST_E_NOMEM, "repair: out of memory");
    if (rc == ST_OK) r->st.files_moved++;
    free(from);
    free(to);
  }
  if (rc == ST_OK) rc = env_sync_dir(r->io, r->dir, err);
  free(lost);
  return rc;
}

/* ---- The whole repair ----------------------------------------------------------------- */

/* Sorts the directory's files by kind; next_file goes above every number in it. */
static int list_files(repair_t *r, err_t *err) {
  char **names = NULL;
  size_t n = 0;
  int rc = env_list_dir(r->io, r->dir, &names, &n, err);
  for (size_t i = 0; i < n && rc == ST_OK; i++) {
    uint64_t number;
    lsm_file_type_t type;
    if (!lsm_filename_parse(names[i], &number, &type)) continue;
    if (number >= r->next_file) r->next_file = number + 1;
    if (type == LSM_FILE_TABLE) rc = u64vec_push(&r->tables, number);
    if (type == LSM_FILE_LOG) rc = u64vec_push(&r->logs, number);
    if (type == LSM_FILE_MANIFEST) rc = u64vec_push(&r->manifests, number);
    if (rc != ST_OK) rc = err_set(err, rc, "repair: out of memory");
  }
  env_names_free(names, n);
  u64vec_sort(&r->tables);
  u64vec_sort(&r->logs);
  return rc;
}

/* dir must be a bfh LSM database: IDENTITY present (*rewrite = it is damaged), or, without
   it, tables or logs and no CURRENT of another engine. Writes nothing. */
static int check_identity(repair_t *r, int *rewrite, err_t *err) {
  char *ident = lsm_filename_identity(r->dir), *cur = lsm_filename_current(r->dir);
  int has_ident = ident && env_exists(r->io, ident), has_cur = cur && env_exists(r->io, cur);
  int nomem = !ident || !cur;
  free(ident);
  free(cur);
  if (nomem) return err_set(err, ST_E_NOMEM, "repair: out of memory");
  *rewrite = 1;
  if (has_ident) {
    err_t e;
    int rc = lsm_identity_read(r->io, r->dir, &e);
    if (rc != ST_E_CORRUPT) {
      if (rc != ST_OK) *err = e;
      *rewrite = 0;
      return rc;
    }
  } else if (has_cur || r->tables.n + r->logs.n == 0) {
    return err_set(err, ST_E_INVALID,
                   "%s: not a bfh lsm database (no IDENTITY, and %s): nothing to repair, "
                   "nothing changed",
                   r->dir, has_cur ? "a CURRENT of another engine" : "no table or log");
  }
  return ST_OK;
}

static int write_identity(repair_t *r, err_t *err) {
  char *ident = lsm_filename_identity(r->dir);
  if (!ident) return err_set(err, ST_E_NOMEM, "repair: out of memory");
  uint8_t id[LSM_IDENTITY_BYTES];
  lsm_identity_encode(id);
  int rc = env_write_file(r->io, ident, id, sizeof id, err);
  free(ident);
  return rc;
}

static void repair_release(repair_t *r, int failed) {
  for (size_t i = 0; i < r->nsrc; i++) iterator_destroy(r->srcs[i]);
  free(r->srcs);
  for (size_t i = 0; i < r->ndamaged; i++) free(r->damaged[i]);
  free(r->damaged);
  for (size_t i = 0; failed && i < r->written.n; i++) {
    char *path = table_file_path(r->dir, r->written.v[i]);
    if (path) (void)env_unlink(r->io, path, NULL); /* else an orphan the next open deletes */
    free(path);
  }
  u64vec_release(&r->tables);
  u64vec_release(&r->logs);
  u64vec_release(&r->manifests);
  u64vec_release(&r->written);
  lsm_version_edit_release(&r->edit);
}

static void repair_init(repair_t *r, const char *dir, env_t *io, const lsm_options_t *opt) {
  memset(r, 0, sizeof *r);
  r->dir = dir;
  r->io = io ? io : env_default();
  r->opt = opt;
  r->next_file = 1;
  u64vec_init(&r->tables);
  u64vec_init(&r->logs);
  u64vec_init(&r->manifests);
  u64vec_init(&r->written);
  lsm_version_edit_init(&r->edit);
}

int lsm_repair_precheck(const char *dir, env_t *io, err_t *err) {
  repair_t r;
  repair_init(&r, dir, io, NULL);
  int rewrite = 0;
  int rc = env_exists(r.io, dir)
               ? list_files(&r, err)
               : err_set(err, ST_E_INVALID, "%s: no such database directory", dir);
  if (rc == ST_OK) rc = check_identity(&r, &rewrite, err);
  repair_release(&r, 0);
  return rc;
}

int lsm_repair(const char *dir, const lsm_options_t *opt, lsm_repair_stats_t *st, err_t *err) {
  lsm_options_t defaults;
  if (!opt) {
    lsm_options_init(&defaults);
    opt = &defaults;
  }
  int rc = lsm_options_check(dir, opt, err);
  if (rc != ST_OK) return rc;
  repair_t r;
  repair_init(&r, dir, opt->io, opt);
  if (!env_exists(r.io, dir))
    return err_set(err, ST_E_INVALID, "%s: no such database directory", dir);
  /* Whether dir is a database at all, before the LOCK (which creates a file): a directory
     that is not one is left as it was. Then again under the LOCK, which the check relies on. */
  int rewrite = 0;
  rc = list_files(&r, err);
  if (rc == ST_OK) rc = check_identity(&r, &rewrite, err);
  if (rc != ST_OK) {
    repair_release(&r, 0);
    return rc;
  }
  r.tables.n = r.logs.n = r.manifests.n = 0;
  char *path = lsm_filename_lock(dir);
  env_lock_t *lock = NULL;
  rc = path ? env_lock(r.io, path, &lock, err) : err_set(err, ST_E_NOMEM, "repair: out of memory");
  free(path);
  if (rc == ST_E_BUSY) err_set(err, rc, "%s: database is open elsewhere (LOCK held)", dir);
  if (rc == ST_OK) rc = list_files(&r, err);
  if (rc == ST_OK) rc = check_identity(&r, &rewrite, err);
  if (rc == ST_OK && rewrite) rc = write_identity(&r, err);
  for (size_t i = 0; i < r.logs.n && rc == ST_OK; i++) rc = repair_log(&r, r.logs.v[i], err);
  for (size_t i = 0; i < r.tables.n && rc == ST_OK; i++) rc = repair_table(&r, r.tables.v[i], err);
  if (rc == ST_OK) rc = write_run(&r, err);
  if (rc == ST_OK) rc = write_manifest(&r, err);
  int installed = rc == ST_OK;
  if (rc == ST_OK) rc = move_to_lost(&r, err);
  if (st) *st = r.st;
  repair_release(&r, !installed);
  env_unlock(lock);
  return rc;
}
