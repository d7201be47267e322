/* The read-only LevelDB engine (readonly.h).
 *
 * A refresh (at every view, so at every search, and at every bfh_get) brings the engine's
 * state up to the database's newest version:
 *   1. read CURRENT and the MANIFEST it names: from where the last read stopped while the
 *      name is the same (LevelDB only appends to a MANIFEST), whole when it changed; a
 *      record cut short at the end is an edit in flight, read next time. This gives version
 *      V: its tables and its log number L.
 *   2. list the directory and read every log numbered >= L (and V's prev log number) from
 *      where the last read stopped (a record cut short at the end is a write in flight);
 *      drop what was read of older logs.
 *   3. read the MANIFEST again (usually nothing new). If its log number is no longer L,
 *      start over at 1; else the state is the tables of this newest version V' plus the
 *      entries read in 2.
 * Why that state holds every write acknowledged before the refresh began, and no write
 * undone: LevelDB writes a memtable's table, then the edit that adds it and raises the log
 * number past the memtable's log, and only then deletes that log; a compaction writes its
 * tables, then the edit, then deletes its inputs. So a write acknowledged before step 1 is
 * in a log >= L (read to its end in 2, after the write) or in a log < L, whose data is in
 * V's tables, and still in V' (V' differs from V only by compactions: the log number did not
 * move). A log >= L can be gone in 2 only after an edit raising the log number was written,
 * which 3 sees (it reads after the deletion). The entries read in 2 are a prefix of the
 * writes in sequence order on top of V''s tables: a state the database passed through.
 * Files of V' may still vanish after 3 (a compaction's inputs are deleted once its edit is
 * written). So the refresh ends by opening every table of V' (a pin_t per table, shared by
 * the states that list it): an unlinked file stays readable through its descriptor, and
 * every later read of the state goes through it. A table gone before its open was deleted
 * after an edit the next MANIFEST read sees: start over at 1 (gone again with nothing new in
 * the MANIFEST: the MANIFEST names a missing table, damage). Beyond pin_max descriptors a
 * table is read by name: a table read that finds its file gone (ENOENT) then makes the
 * search start over with a new refresh (engine_leveldb_ro_search), and its keys are
 * reported only by the attempt that read every table it listed, so each once. A MANIFEST
 * replaced between reading CURRENT and reading it is the same: start over. Retries are
 * bounded (ENGINE_LEVELDB_RO_ATTEMPTS), then BFH_E_BUSY.
 *
 * A search validates its candidates against its own view (the state of its refresh): the
 * gets it makes pass that view (engine_ops_t.get), and read its state: logs newest first,
 * then the tables by level (level 0 newest first), each table only if its key range holds
 * the key. A bfh_get (no view) refreshes first.
 *
 * An iterator (bfh_iter_*) refreshes, then reads every entry of that state (its logs and
 * every table of its version) into memory (sorted_iter.h) and iterates there: the files it
 * read may vanish afterwards without harm. A table gone before it was read starts the read
 * over from a new refresh, as a search does.
 *
 * A log read can race the owner's append and see part of a write(2): a record that looks
 * damaged. Such a refresh is started over too; damage that stays for every attempt is
 * reported (BFH_E_CORRUPT).
 *
 * A database replaced at the path (removed, and another made there: stock LevelDB gives the
 * new one the same MANIFEST name, log and table numbers, often the same sizes) must not be
 * read as the old one went on. Names are not identities, so the engine holds open the MANIFEST
 * it reads, each log it reads and (pins) each table of its state, and compares the file a name
 * gives now (one stat, which the refresh made for the size anyway) with the file it holds
 * (device and inode: a file held open keeps its inode, so another file cannot have it):
 *   - the MANIFEST (every read): another file under the name, or a shorter one, is a new
 *     database: what was read of the MANIFEST and the logs is dropped, and the refresh starts
 *     over (step 3 sees a change made after step 1);
 *   - a log (every read): another file is read from its start, its old entries dropped;
 *   - the tables: after the MANIFEST was read whole (another name or another file), the pin a
 *     table number had is kept only if its name still gives that file, else the new file is
 *     pinned. Every table's identity goes to index_sync with the live list
 *     (index_table_t.id), which drops a leaf made from another file and reads the table again.
 * A table beyond pin_max is not held: its identity is its name's device and inode, taken after
 * each whole MANIFEST read (an inode freed and given again to the new table would go
 * unnoticed there). A search running across the replacement answers from its own state.
 */
#include "lsm_hooks/engines/leveldb_ro/readonly.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "filters/hash.h"
#include "util/env.h"
#include "lsm_hooks/index/leaf_cache.h"
#include "lsm_hooks/engines/leveldb/adapter.h"
#include "lsm_hooks/engines/leveldb/filter.h"
#include "lsm_hooks/leveldb_format/ldb_log.h"
#include "lsm_hooks/engines/leveldb/precheck.h"
#include "lsm_hooks/engines/leveldb/sorted_iter.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"
#include "lsm_hooks/leveldb_format/ldb_version_edit.h"
#include "lsm_hooks/search/search.h"
#include "util/coding.h"
#include "util/vec.h"

#define AGAIN 2 /* internal: the database changed under the read; start over */
#define KEY_HASH_SEED 0x726f6b6579733031ull /* "rokeys01" */

/* ---- Chunks: what one read of a log added ------------------------------------------------ */

/* The entries of one stretch of a log, immutable once made: their values indexed by value
   (vals, for searches) and every entry, deletions included, indexed by key (for gets).
   data: n x (type u8 | fixed32 key_len | key | fixed32 val_len | val); slots: open
   addressing by bfh_hash64(key), offset + 1 of the key's last entry in the chunk. */
typedef struct chunk {
  atomic_int refs;
  log_seg_t *vals;
  uint8_t *data;
  size_t len;
  uint64_t *slots;
  size_t mask;
} chunk_t;

typedef struct chunk_builder {
  ldb_seg_builder_t vals;
  uint8_t *p;
  size_t len, cap;
  uint64_t n;
  int nomem;
} chunk_builder_t;

static void chunk_unref(chunk_t *c) {
  if (!c || atomic_fetch_sub(&c->refs, 1) != 1) return;
  ldb_seg_unref(c->vals);
  free(c->data);
  free(c->slots);
  free(c);
}

static int builder_add(void *arg, const ldb_entry_t *e) {
  chunk_builder_t *b = arg;
  size_t need = b->len + 1 + 2 * 4 + e->key_len + e->val_len;
  if (need > b->cap) {
    size_t c = b->cap ? b->cap : 65536;
    while (c < need) c *= 2;
    uint8_t *p = realloc(b->p, c);
    if (!p) return b->nomem = 1;
    b->p = p;
    b->cap = c;
  }
  uint8_t *q = b->p + b->len;
  *q++ = (uint8_t)e->type;
  encode_fixed32(q, (uint32_t)e->key_len);
  q += 4;
  if (e->key_len) memcpy(q, e->key, e->key_len);
  q += e->key_len;
  encode_fixed32(q, (uint32_t)e->val_len);
  q += 4;
  if (e->val_len) memcpy(q, e->val, e->val_len);
  b->len = (size_t)(q + e->val_len - b->p);
  b->n++;
  if (e->type == LDB_TYPE_VALUE &&
      ldb_seg_builder_add(&b->vals, e->key, e->key_len, e->val, e->val_len) != BFH_OK)
    return b->nomem = 1;
  return 0;
}

static void builder_release(chunk_builder_t *b) {
  ldb_seg_builder_release(&b->vals);
  free(b->p);
}

/* The entry at p (written by builder_add, so well formed): type, key, value; returns the
   next one. */
static const uint8_t *decode_chunk_entry(const uint8_t *p, int *type, const uint8_t **k,
                                         uint32_t *kl, const uint8_t **v, uint32_t *vl) {
  *type = *p++;
  *kl = decode_fixed32(p);
  *k = p + 4;
  p = *k + *kl;
  *vl = decode_fixed32(p);
  *v = p + 4;
  return *v + *vl;
}

static int same_key(const uint8_t *a, size_t al, const void *b, size_t bl) {
  return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

/* A chunk of b's entries (one reference), or NULL without memory. */
static chunk_t *chunk_make(chunk_builder_t *b) {
  chunk_t *c = calloc(1, sizeof *c);
  size_t nslots = 2;
  while (nslots < 2 * b->n) nslots *= 2;
  if (c) c->slots = calloc(nslots, sizeof *c->slots);
  if (c) c->vals = ldb_seg_builder_finish(&b->vals);
  if (!c || !c->slots || !c->vals) {
    if (c) ldb_seg_unref(c->vals), free(c->slots), free(c);
    return NULL;
  }
  atomic_init(&c->refs, 1);
  c->data = b->p; /* taken over */
  c->len = b->len;
  b->p = NULL;
  c->mask = nslots - 1;
  const uint8_t *p = c->data, *end = c->data + c->len;
  while (p < end) {
    uint64_t off = (uint64_t)(p - c->data);
    int type;
    const uint8_t *k, *v;
    uint32_t kl, vl;
    p = decode_chunk_entry(p, &type, &k, &kl, &v, &vl);
    size_t i = (size_t)bfh_hash64(k, kl, KEY_HASH_SEED) & c->mask;
    for (; c->slots[i]; i = (i + 1) & c->mask) {
      int t2;
      const uint8_t *k2, *v2;
      uint32_t kl2, vl2;
      decode_chunk_entry(c->data + c->slots[i] - 1, &t2, &k2, &kl2, &v2, &vl2);
      if (same_key(k2, kl2, k, kl)) break; /* a later entry of the key replaces it */
    }
    c->slots[i] = off + 1;
  }
  return c;
}

/* The last entry of key in c: 1 (and *type, *v, *vl) or 0. */
static int chunk_find(const chunk_t *c, const void *key, size_t key_len, int *type,
                      const uint8_t **v, uint32_t *vl) {
  for (size_t i = (size_t)bfh_hash64(key, key_len, KEY_HASH_SEED) & c->mask; c->slots[i];
       i = (i + 1) & c->mask) {
    const uint8_t *k;
    uint32_t kl;
    decode_chunk_entry(c->data + c->slots[i] - 1, type, &k, &kl, v, vl);
    if (same_key(k, kl, key, key_len)) return 1;
  }
  return 0;
}

/* ---- The engine's state ------------------------------------------------------------------- */

typedef struct ro_log {
  uint64_t number, resume;
  env_rfile_t *file; /* held open from its first read: which file was read (NULL before) */
  chunk_t **chunks;
  size_t n, cap;
} ro_log_t;

/* One refreshed state, immutable, shared by the views made from it; freed with its last
   reference. */
typedef struct ro_state {
  atomic_int refs;
  ldb_version_t version;
  engine_table_t *tables; /* version's files, sorted by number */
  struct pin **pins;      /* parallel to tables: each file held open, or NULL (not pinned) */
  uint64_t *ids;          /* parallel to tables: which file each is (index_table_t.id) */
  size_t ntables;
  chunk_t **chunks; /* oldest first */
  log_seg_t **segs; /* chunks[i]->vals */
  size_t nchunks;
} ro_state_t;

typedef struct engine_ro {
  engine_t base;
  char *path, *cache_dir;
  env_t *io;
  index_sync_t *sync;
  void (*read_hook)(void *arg, uint64_t number);
  void *read_hook_arg;
  void (*logs_hook)(void *arg);
  void *logs_hook_arg;
  atomic_ullong retries;
  atomic_ullong pinned;          /* table files held open now (pin_t) */
  unsigned long long pin_max;    /* at most this many held open at once */
  uint64_t missing;              /* a table the last refresh found missing (0: none) ... */
  char missing_manifest[64];     /* ... with this MANIFEST name ... */
  uint64_t missing_resume;       /* ... read up to here */

  pthread_mutex_t mu; /* guards everything below */
  char manifest[64];  /* the MANIFEST name last read ("" before the first) */
  env_rfile_t *manifest_file; /* held open: which file under that name was read */
  uint64_t manifest_resume;
  int recheck; /* the MANIFEST was read whole: check the tables' names against their files */
  ldb_version_t version;
  int version_changed; /* since the last state was made */
  ro_log_t *logs;      /* ascending numbers */
  size_t nlogs;
  int logs_changed;
  ro_state_t *state; /* the newest state made (a reference), NULL before the first */
} engine_ro_t;

/* A table file held open from the refresh that listed it until the last state listing it
   goes: an unlinked file stays readable through its descriptor, so the compaction that
   deletes it cannot take it from a search of a state that lists it (top of the file). */
typedef struct pin {
  atomic_int refs;
  env_rfile_t *f;
  atomic_ullong *count; /* the engine's count of pins */
  char path[];          /* the table's name in messages */
} pin_t;

static void pin_unref(pin_t *p) {
  if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
  env_rfile_close(p->f);
  atomic_fetch_sub(p->count, 1);
  free(p);
}

/* The pin of table `number` in s, or NULL. */
static pin_t *state_pin(const ro_state_t *s, uint64_t number) {
  size_t lo = 0, hi = s->ntables;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->tables[mid].number < number)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->ntables && s->tables[lo].number == number && s->pins ? s->pins[lo] : NULL;
}

static void state_unref(ro_state_t *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  for (size_t i = 0; s->pins && i < s->ntables; i++) pin_unref(s->pins[i]);
  free(s->pins);
  free(s->ids);
  ldb_version_release(&s->version);
  for (size_t i = 0; i < s->nchunks; i++) chunk_unref(s->chunks[i]);
  free(s->chunks);
  free(s->segs);
  free(s->tables);
  free(s);
}

static int cmp_table(const void *a, const void *b) {
  uint64_t x = ((const engine_table_t *)a)->number, y = ((const engine_table_t *)b)->number;
  return x < y ? -1 : x > y;
}

/* Holds table `number` open for state s (slot i): the pin of the previous state, or a new
   one while fewer than pin_max are held (beyond, or when the open fails for another reason
   than the file being gone, the table stays unpinned: read by name, as it vanishes it makes
   the search start over). BFH_OK; BFH_NOT_FOUND when the file is gone; BFH_E_NOMEM. */
static int pin_table(engine_ro_t *r, ro_state_t *s, size_t i, err_t *err) {
  uint64_t number = s->tables[i].number;
  char path[4200];
  ldb_table_path(r->path, number, path, sizeof path);
  pin_t *p = r->state && r->pin_max ? state_pin(r->state, number) : NULL;
  if (p && r->recheck) { /* the database may be another one: is the name still this file? */
    uint64_t size;
    env_file_id_t id;
    err_t e;
    int rc = env_path_stat(r->io, path, &size, &id, &e);
    if (rc == BFH_NOT_FOUND) return rc;
    if (rc != BFH_OK || !env_file_id_equal(id, env_rfile_id(p->f))) p = NULL; /* pin anew */
  }
  if (p) {
    atomic_fetch_add(&p->refs, 1);
    s->pins[i] = p;
    return BFH_OK;
  }
  if (atomic_load(&r->pinned) >= r->pin_max) return BFH_OK;
  size_t n = strlen(path) + 1;
  if (!(p = malloc(sizeof *p + n))) return err_set(err, BFH_E_NOMEM, "%s: no memory", r->path);
  memcpy(p->path, path, n);
  err_t e;
  int rc = env_open_read(r->io, path, &p->f, &e);
  if (rc != BFH_OK) {
    free(p);
    if (rc == BFH_E_NOMEM) return err_set(err, rc, "%s", e.msg);
    return env_exists(r->io, path) ? BFH_OK : BFH_NOT_FOUND;
  }
  atomic_init(&p->refs, 1);
  p->count = &r->pinned;
  atomic_fetch_add(&r->pinned, 1);
  s->pins[i] = p;
  return BFH_OK;
}

/* A table of the version was gone when pinned: deleted by a compaction whose edit the next
   MANIFEST read sees (AGAIN), unless that read finds nothing new and the same table gone
   again: then the MANIFEST names a table that does not exist (damage). REQUIRES mu. */
static int table_gone(engine_ro_t *r, uint64_t number, err_t *err) {
  if (r->missing == number && r->missing_resume == r->manifest_resume &&
      strcmp(r->missing_manifest, r->manifest) == 0)
    return err_set(err, BFH_E_CORRUPT, "%s: table %06llu, named by the live version of %s, is "
                   "missing", r->path, (unsigned long long)number, r->manifest);
  r->missing = number;
  r->missing_resume = r->manifest_resume;
  snprintf(r->missing_manifest, sizeof r->missing_manifest, "%s", r->manifest);
  return AGAIN;
}

static uint64_t fold_id(env_file_id_t id) {
  uint64_t h = bfh_hash64(&id, sizeof id, KEY_HASH_SEED);
  return h ? h : 1;
}

/* s->ids[i]: the identity of table i's file: its pin's, else (not held) the previous state's
   unless the MANIFEST was read whole since, else its name's now. BFH_OK or BFH_NOT_FOUND (the
   file is gone). REQUIRES mu. */
static int table_id(engine_ro_t *r, ro_state_t *s, size_t i) {
  if (s->pins[i]) {
    s->ids[i] = fold_id(env_rfile_id(s->pins[i]->f));
    return BFH_OK;
  }
  const ro_state_t *prev = r->state;
  if (prev && !r->recheck) {
    const engine_table_t *t =
        bsearch(&s->tables[i], prev->tables, prev->ntables, sizeof *prev->tables, cmp_table);
    if (t && prev->ids[t - prev->tables]) {
      s->ids[i] = prev->ids[t - prev->tables];
      return BFH_OK;
    }
  }
  char path[4200];
  ldb_table_path(r->path, s->tables[i].number, path, sizeof path);
  uint64_t size;
  env_file_id_t id;
  err_t e;
  int rc = env_path_stat(r->io, path, &size, &id, &e);
  if (rc == BFH_NOT_FOUND) return rc;
  s->ids[i] = rc == BFH_OK ? fold_id(id) : 0; /* 0: not known (the leaf is kept as it is) */
  return BFH_OK;
}

/* A new state from r's version and logs (one reference) into *out: BFH_OK, AGAIN (a table
   of the version was deleted since the MANIFEST was read), or an error. REQUIRES mu. */
static int state_make(engine_ro_t *r, ro_state_t **out, err_t *err) {
  ro_state_t *s = calloc(1, sizeof *s);
  if (!s) return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  atomic_init(&s->refs, 1);
  size_t nc = 0;
  for (size_t i = 0; i < r->nlogs; i++) nc += r->logs[i].n;
  s->tables = malloc((r->version.nfiles + 1) * sizeof *s->tables);
  s->chunks = malloc((nc + 1) * sizeof *s->chunks);
  s->segs = malloc((nc + 1) * sizeof *s->segs);
  if (!s->tables || !s->chunks || !s->segs || ldb_version_copy(&s->version, &r->version)) {
    state_unref(s);
    return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  }
  for (size_t i = 0; i < r->version.nfiles; i++) {
    const ldb_file_t *f = &r->version.files[i];
    s->tables[i] = (engine_table_t){.number = f->number, .size = f->size, .level = f->level};
  }
  s->ntables = r->version.nfiles;
  qsort(s->tables, s->ntables, sizeof *s->tables, cmp_table);
  s->pins = calloc(s->ntables + 1, sizeof *s->pins);
  int rc = s->pins ? BFH_OK : err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  s->ids = calloc(s->ntables + 1, sizeof *s->ids);
  if (rc == BFH_OK && !s->ids)
    rc = err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  for (size_t i = 0; i < s->ntables && rc == BFH_OK; i++) {
    if ((rc = pin_table(r, s, i, err)) == BFH_OK) rc = table_id(r, s, i);
    if (rc == BFH_NOT_FOUND) rc = table_gone(r, s->tables[i].number, err);
  }
  if (rc != BFH_OK) {
    state_unref(s);
    return rc;
  }
  r->missing = 0;
  r->recheck = 0;
  for (size_t i = 0; i < r->nlogs; i++)
    for (size_t j = 0; j < r->logs[i].n; j++) {
      chunk_t *c = r->logs[i].chunks[j];
      atomic_fetch_add(&c->refs, 1);
      s->segs[s->nchunks] = c->vals;
      s->chunks[s->nchunks++] = c;
    }
  *out = s;
  return BFH_OK;
}

/* ---- Refresh ------------------------------------------------------------------------------ */

static void log_release(ro_log_t *l) {
  for (size_t i = 0; i < l->n; i++) chunk_unref(l->chunks[i]);
  free(l->chunks);
  env_rfile_close(l->file);
}

/* Another MANIFEST (by name or by file): what was read of the old one and of the logs is
   dropped, the next state checks every table's name against its pin. REQUIRES mu. */
static void forget_manifest(engine_ro_t *r) {
  ldb_version_release(&r->version);
  r->manifest_resume = 0;
  r->version_changed = 1;
  env_rfile_close(r->manifest_file);
  r->manifest_file = NULL;
  for (size_t i = 0; i < r->nlogs; i++) log_release(&r->logs[i]);
  free(r->logs);
  r->logs = NULL;
  r->nlogs = 0;
  r->logs_changed = 1;
  r->recheck = 1;
}

/* Step 1 (and 3): CURRENT and the MANIFEST's new edits into r->version. REQUIRES mu. */
static int read_manifest(engine_ro_t *r, err_t *err) {
  char path[4200];
  snprintf(path, sizeof path, "%s/CURRENT", r->path);
  void *data = NULL;
  size_t len = 0;
  int rc = env_read_file(r->io, path, &data, &len, err);
  if (rc != BFH_OK) return env_exists(r->io, path) || rc == BFH_E_NOMEM ? rc : AGAIN;
  char name[64];
  const char *s = data;
  size_t n = len;
  if (n > 0 && s[n - 1] == '\n') n--;
  int ok = n > 9 && n < sizeof name && strncmp(s, "MANIFEST-", 9) == 0;
  for (size_t i = 9; ok && i < n; i++) ok = s[i] >= '0' && s[i] <= '9';
  if (ok) memcpy(name, s, n), name[n] = '\0';
  free(data);
  if (!ok) return err_set(err, BFH_E_CORRUPT, "%s: not \"MANIFEST-<number>\\n\"", path);
  if (strcmp(name, r->manifest) != 0) { /* a new MANIFEST: its first edit is a snapshot */
    forget_manifest(r);
    snprintf(r->manifest, sizeof r->manifest, "%s", name);
  }
  snprintf(path, sizeof path, "%s/%s", r->path, r->manifest);
  uint64_t size;
  env_file_id_t id;
  rc = env_path_stat(r->io, path, &size, &id, err);
  if (rc == BFH_NOT_FOUND) return AGAIN; /* replaced since CURRENT was read */
  if (rc != BFH_OK) return rc;
  if (r->manifest_file &&
      (!env_file_id_equal(id, env_rfile_id(r->manifest_file)) || size < r->manifest_resume)) {
    forget_manifest(r); /* another file under the name: the database was replaced */
    return AGAIN;
  }
  if (!r->manifest_file) { /* held from its first read on, to know it again (top of the file) */
    rc = env_open_read(r->io, path, &r->manifest_file, err);
    if (rc == BFH_NOT_FOUND || (rc != BFH_OK && !env_exists(r->io, path))) return AGAIN;
    if (rc != BFH_OK) return rc;
    if (!env_file_id_equal(id, env_rfile_id(r->manifest_file))) {
      forget_manifest(r);
      return AGAIN;
    }
  }
  if (size == r->manifest_resume) return BFH_OK; /* nothing appended */
  uint64_t next = r->manifest_resume;
  rc = ldb_version_read(r->io, path, r->manifest_resume, &r->version, &next, err);
  if (rc == BFH_OK && next != r->manifest_resume) r->version_changed = 1;
  if (rc == BFH_OK) r->manifest_resume = next;
  if (rc != BFH_OK) r->manifest[0] = '\0'; /* the version may be half-applied: read it whole */
  return rc == BFH_NOT_FOUND ? AGAIN : rc;
}

/* Is log `number` one version `v` needs? */
static int log_needed(const ldb_version_t *v, uint64_t number) {
  return number >= v->log_number || (v->prev_log_number && number == v->prev_log_number);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The numbers of the logs the version needs, from the directory, ascending. */
static int list_logs(engine_ro_t *r, u64vec_t *nums, err_t *err) {
  char **names;
  size_t n;
  int rc = env_list_dir(r->io, r->path, &names, &n, err);
  if (rc != BFH_OK) return rc;
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    uint64_t num;
    if (ldb_file_number(names[i], "log", &num) && log_needed(&r->version, num) &&
        u64vec_push(nums, num) != BFH_OK)
      rc = err_set(err, BFH_E_NOMEM, "%s: no memory to list logs", r->path);
  }
  env_names_free(names, n);
  if (nums->n) qsort(nums->v, nums->n, sizeof *nums->v, cmp_u64);
  return rc;
}

/* Reads what was appended to log l since the last read into a new chunk. */
static int read_log(engine_ro_t *r, ro_log_t *l, err_t *err) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%06llu.log", r->path, (unsigned long long)l->number);
  uint64_t size;
  env_file_id_t id;
  int rc = env_path_stat(r->io, path, &size, &id, err);
  if (rc == BFH_NOT_FOUND) return AGAIN; /* its table is in a newer version */
  if (rc != BFH_OK) return rc;
  if (l->file && (!env_file_id_equal(id, env_rfile_id(l->file)) || size < l->resume)) {
    uint64_t number = l->number; /* another file under the number: read it from its start */
    log_release(l);
    *l = (ro_log_t){.number = number};
    r->logs_changed = 1;
  }
  if (!l->file && size > 0) {
    rc = env_open_read(r->io, path, &l->file, err);
    if (rc == BFH_NOT_FOUND || (rc != BFH_OK && !env_exists(r->io, path))) return AGAIN;
    if (rc != BFH_OK) return rc;
    if (!env_file_id_equal(id, env_rfile_id(l->file))) return AGAIN; /* replaced meanwhile */
  }
  if (size <= l->resume) return BFH_OK;
  chunk_builder_t b = {0};
  b.vals.seed = ldb_value_seed(r->sync);
  uint64_t next = l->resume;
  rc = ldb_log_read(r->io, path, l->resume, builder_add, &b, &next, NULL, err);
  if (rc == BFH_OK && b.nomem) rc = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
  if (rc == BFH_OK && b.n > 0) {
    chunk_t *c = NULL;
    if (l->n == l->cap) {
      size_t cap = l->cap ? 2 * l->cap : 8;
      chunk_t **nc = realloc(l->chunks, cap * sizeof *nc);
      if (nc) l->chunks = nc, l->cap = cap;
    }
    if (l->n < l->cap) c = chunk_make(&b);
    if (!c) rc = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
    if (c) l->chunks[l->n++] = c;
  }
  builder_release(&b);
  if (rc == BFH_OK) {
    r->logs_changed |= next != l->resume;
    l->resume = next;
  }
  return rc == BFH_NOT_FOUND ? AGAIN : rc;
}

/* Step 2: r->logs become the logs the version needs, each read to its end. */
static int read_logs(engine_ro_t *r, err_t *err) {
  u64vec_t nums;
  u64vec_init(&nums);
  int rc = list_logs(r, &nums, err);
  ro_log_t *logs = rc == BFH_OK ? calloc(nums.n + 1, sizeof *logs) : NULL;
  if (rc == BFH_OK && !logs) rc = err_set(err, BFH_E_NOMEM, "%s: no memory for logs", r->path);
  if (rc != BFH_OK) {
    u64vec_release(&nums);
    return rc;
  }
  /* Keep what was read of the listed logs; forget the others (their data is in tables). */
  for (size_t i = 0; i < nums.n; i++) logs[i].number = nums.v[i];
  for (size_t j = 0; j < r->nlogs; j++) {
    ro_log_t *dst = NULL;
    for (size_t i = 0; i < nums.n && !dst; i++)
      if (logs[i].number == r->logs[j].number) dst = &logs[i];
    if (dst)
      *dst = r->logs[j];
    else
      log_release(&r->logs[j]), r->logs_changed = 1;
  }
  free(r->logs);
  r->logs = logs;
  r->nlogs = nums.n;
  u64vec_release(&nums);
  for (size_t i = 0; i < r->nlogs && rc == BFH_OK; i++) rc = read_log(r, &r->logs[i], err);
  return rc;
}

/* Steps 1-3 once: BFH_OK (r->state is then current), AGAIN, or an error. REQUIRES mu. */
static int refresh_once(engine_ro_t *r, err_t *err) {
  int rc = read_manifest(r, err);
  if (rc != BFH_OK) return rc;
  if (!r->version.has_log_number) return AGAIN; /* a new MANIFEST still being written */
  uint64_t log_number = r->version.log_number;
  rc = read_logs(r, err);
  if (rc == BFH_OK && r->logs_hook) r->logs_hook(r->logs_hook_arg);
  if (rc == BFH_OK) rc = read_manifest(r, err);
  if (rc != BFH_OK) return rc;
  if (r->version.log_number != log_number) return AGAIN;
  if (r->state && !r->version_changed && !r->logs_changed) return BFH_OK;
  ro_state_t *s = NULL;
  rc = state_make(r, &s, err);
  if (rc != BFH_OK) return rc;
  state_unref(r->state);
  r->state = s;
  r->version_changed = r->logs_changed = 0;
  return BFH_OK;
}

/* Brings r->state up to the newest version. REQUIRES mu. */
static int refresh(engine_ro_t *r, err_t *err) {
  int rc = AGAIN;
  for (int attempt = 0; attempt < ENGINE_LEVELDB_RO_ATTEMPTS; attempt++) {
    rc = refresh_once(r, err);
    /* A damaged-looking record may be an append in flight (see the top): read again. */
    if (rc != AGAIN && !(rc == BFH_E_CORRUPT && attempt + 1 < ENGINE_LEVELDB_RO_ATTEMPTS))
      return rc;
    atomic_fetch_add(&r->retries, 1);
  }
  if (rc != AGAIN) return rc;
  return err_set(err, BFH_E_BUSY,
                 "%s: the database changed under each of %d reads of its MANIFEST and logs",
                 r->path, ENGINE_LEVELDB_RO_ATTEMPTS);
}

/* ---- Reading tables --------------------------------------------------------------------- */

/* A table read's status: a file gone is the version changing under the search. */
static int table_status(engine_ro_t *r, int rc, uint64_t number, err_t *err) {
  if (rc != BFH_NOT_FOUND) return rc;
  return err_set(err, BFH_E_BUSY, "%s: table %06llu vanished while read (the owner compacted it)",
                 r->path, (unsigned long long)number);
}

static int read_table(engine_ro_t *r, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                      size_t n, const ldb_match_t *m, engine_scan_stats_t *st, err_t *err) {
  if (!engine_tables_contain(v->tables, v->ntables, number)) return BFH_OK;
  if (r->read_hook) r->read_hook(r->read_hook_arg, number);
  pin_t *p = state_pin(v->ro_state, number);
  if (p) return ldb_table_match_rfile(p->f, p->path, refs, n, m, st, err);
  return table_status(r, ldb_table_match(r->io, r->path, number, refs, n, m, st, err), number, err);
}

/* A point lookup: the newest entry of key in one table. */
typedef struct lookup {
  const void *key;
  size_t key_len;
  int found, type;
  void *val;
  size_t val_len;
  int nomem;
} lookup_t;

static int cmp_key(const void *a, size_t al, const void *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return c ? c : (al > bl) - (al < bl);
}

/* Entries come in internal-key order (user key ascending, newest first): the first entry of
   the key is its newest in the table; a greater key ends the search. */
static int visit_lookup(void *arg, const ldb_entry_t *e) {
  lookup_t *l = arg;
  int c = cmp_key(e->key, e->key_len, l->key, l->key_len);
  if (c < 0) return 0;
  if (c == 0) {
    l->found = 1;
    l->type = e->type;
    l->val = malloc(e->val_len ? e->val_len : 1);
    if (!l->val) l->nomem = 1;
    if (l->val && e->val_len) memcpy(l->val, e->val, e->val_len);
    l->val_len = e->val_len;
  }
  return 1;
}

static int file_holds(const ldb_file_t *f, const void *key, size_t key_len) {
  return cmp_key(f->smallest, f->smallest_len, key, key_len) <= 0 &&
         cmp_key(key, key_len, f->largest, f->largest_len) <= 0;
}

/* Level 0 first, newest file first; then each deeper level (whose files do not overlap). */
static int cmp_get_order(const void *a, const void *b) {
  const ldb_file_t *x = *(const ldb_file_t *const *)a, *y = *(const ldb_file_t *const *)b;
  if (x->level != y->level) return x->level - y->level;
  return x->number < y->number ? 1 : x->number > y->number ? -1 : 0;
}

static int get_from_tables(engine_ro_t *r, const ro_state_t *s, lookup_t *l, err_t *err) {
  const ldb_file_t **order = malloc((s->version.nfiles + 1) * sizeof *order);
  if (!order) return err_set(err, BFH_E_NOMEM, "%s: get: no memory", r->path);
  size_t n = 0;
  for (size_t i = 0; i < s->version.nfiles; i++)
    if (file_holds(&s->version.files[i], l->key, l->key_len)) order[n++] = &s->version.files[i];
  qsort(order, n, sizeof *order, cmp_get_order);
  int rc = BFH_OK;
  for (size_t i = 0; i < n && rc == BFH_OK && !l->found; i++) {
    if (r->read_hook) r->read_hook(r->read_hook_arg, order[i]->number);
    pin_t *p = state_pin(s, order[i]->number);
    if (p) {
      rc = ldb_table_scan_rfile(p->f, p->path, visit_lookup, l, NULL, err);
      continue;
    }
    char path[4200];
    ldb_table_path(r->path, order[i]->number, path, sizeof path);
    rc = table_status(r, ldb_table_scan(r->io, path, visit_lookup, l, NULL, err), order[i]->number,
                      err);
  }
  free(order);
  if (rc == BFH_OK && l->nomem) rc = err_set(err, BFH_E_NOMEM, "%s: get: no memory", r->path);
  return rc;
}

/* get in state s: the logs (newest first), then the tables. */
static int state_get(engine_ro_t *r, const ro_state_t *s, const void *key, size_t key_len,
                     void **val, size_t *val_len, err_t *err) {
  lookup_t l = {.key = key, .key_len = key_len};
  for (size_t i = s->nchunks; i-- > 0 && !l.found;) {
    const uint8_t *v;
    uint32_t vl;
    if (!chunk_find(s->chunks[i], key, key_len, &l.type, &v, &vl)) continue;
    l.found = 1;
    l.val = malloc(vl ? vl : 1);
    if (!l.val) return err_set(err, BFH_E_NOMEM, "%s: get: no memory", r->path);
    if (vl) memcpy(l.val, v, vl);
    l.val_len = vl;
  }
  int rc = l.found ? BFH_OK : get_from_tables(r, s, &l, err);
  if (rc != BFH_OK || !l.found || l.type != LDB_TYPE_VALUE) {
    free(l.val);
    return rc != BFH_OK ? rc : BFH_NOT_FOUND;
  }
  *val = l.val;
  *val_len = l.val_len;
  return BFH_OK;
}

/* ---- engine_ops ------------------------------------------------------------------------- */

static int e_close(engine_t *e, err_t *err) {
  (void)err;
  engine_ro_t *r = (engine_ro_t *)e;
  if (!r) return BFH_OK;
  if (r->sync && r->cache_dir) index_sync_close_caches(r->sync);
  state_unref(r->state);
  for (size_t i = 0; i < r->nlogs; i++) log_release(&r->logs[i]);
  free(r->logs);
  env_rfile_close(r->manifest_file);
  ldb_version_release(&r->version);
  pthread_mutex_destroy(&r->mu);
  free(r->path);
  free(r->cache_dir);
  free(r);
  return BFH_OK;
}

static int read_only(engine_t *e, const char *op, err_t *err) {
  return err_set(err, BFH_E_UNSUPPORTED, "%s: %s: read-only handle", ((engine_ro_t *)e)->path, op);
}

static int e_put(engine_t *e, const void *key, size_t key_len, const void *val, size_t val_len,
                 err_t *err) {
  (void)key, (void)key_len, (void)val, (void)val_len;
  return read_only(e, "put", err);
}

static int e_del(engine_t *e, const void *key, size_t key_len, err_t *err) {
  (void)key, (void)key_len;
  return read_only(e, "delete", err);
}

static int e_flush(engine_t *e, err_t *err) {
  return read_only(e, "flush", err);
}

/* The newest state (a reference), refreshed first. */
static int current_state(engine_ro_t *r, ro_state_t **s, err_t *err) {
  pthread_mutex_lock(&r->mu);
  int rc = refresh(r, err);
  if (rc == BFH_OK) atomic_fetch_add(&r->state->refs, 1), *s = r->state;
  pthread_mutex_unlock(&r->mu);
  return rc;
}

static int e_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
                 size_t *val_len, err_t *err) {
  engine_ro_t *r = (engine_ro_t *)e;
  if (view) /* a search validating its candidates: its own state */
    return state_get(r, view->ro_state, key, key_len, val, val_len, err);
  int rc = BFH_E_BUSY;
  for (int attempt = 0; attempt < ENGINE_LEVELDB_RO_ATTEMPTS && rc == BFH_E_BUSY; attempt++) {
    ro_state_t *s;
    rc = current_state(r, &s, err);
    if (rc != BFH_OK) return rc;
    rc = state_get(r, s, key, key_len, val, val_len, err);
    state_unref(s);
  }
  return rc;
}

/* Reports s's tables to index_sync (pinning *epoch) and gives the new ones their leaves. */
static int index_state(engine_ro_t *r, const ro_state_t *s, uint64_t *epoch, err_t *err) {
  index_table_t *live = malloc((s->ntables + 1) * sizeof *live);
  if (!live) return err_set(err, BFH_E_NOMEM, "%s: no memory", r->path);
  for (size_t i = 0; i < s->ntables; i++)
    live[i] = (index_table_t){s->tables[i].number, s->tables[i].size, s->ids[i]};
  int rc = index_sync_tables_listed(r->sync, live, s->ntables, epoch, err);
  free(live);
  return rc;
}

static int e_view_acquire(engine_t *e, engine_view_t **view, err_t *err) {
  engine_ro_t *r = (engine_ro_t *)e;
  engine_view_t *v = calloc(1, sizeof *v);
  if (!v) return err_set(err, BFH_E_NOMEM, "%s: no memory for a view", r->path);
  pthread_mutex_lock(&r->mu);
  int rc = refresh(r, err);
  if (rc == BFH_OK) {
    v->ro_state = r->state;
    atomic_fetch_add(&r->state->refs, 1);
    /* Listed under mu, so that index_sync sees the versions in order. */
    if (r->sync) rc = index_state(r, r->state, &v->epoch, err);
  }
  pthread_mutex_unlock(&r->mu);
  /* New tables get their leaves now: the first search builds every leaf (or loads it from
     the index directory), later ones only those of tables made since. */
  if (rc == BFH_OK && r->sync) rc = index_sync_run(r->sync, INDEX_RUN_ALL, 0, err);
  if (rc != BFH_OK) {
    if (v->epoch) index_sync_view_unpin(r->sync, v->epoch);
    state_unref(v->ro_state);
    free(v);
    return rc;
  }
  ro_state_t *s = v->ro_state;
  v->tables = s->tables;
  v->ntables = s->ntables;
  v->segs = s->segs;
  v->nsegs = s->nchunks;
  *view = v;
  return BFH_OK;
}

static void e_view_release(engine_t *e, engine_view_t *v) {
  engine_ro_t *r = (engine_ro_t *)e;
  if (!v) return;
  if (r->sync && v->epoch) index_sync_view_unpin(r->sync, v->epoch);
  state_unref(v->ro_state);
  free(v);
}

static size_t e_view_tables(const engine_view_t *v, const engine_table_t **tables) {
  *tables = v->tables;
  return v->ntables;
}

static int e_scan_table(engine_t *e, engine_view_t *v, uint64_t number, const void *val,
                        size_t val_len, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                        err_t *err) {
  ldb_match_t m = {val, val_len, fn, arg};
  return read_table((engine_ro_t *)e, v, number, NULL, 0, &m, st, err);
}

static int e_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                         size_t n, const void *val, size_t val_len, engine_match_fn fn, void *arg,
                         engine_scan_stats_t *st, err_t *err) {
  ldb_match_t m = {val, val_len, fn, arg};
  return read_table((engine_ro_t *)e, v, number, refs, n, &m, st, err);
}

static int e_scan_memtables(engine_t *e, engine_view_t *v, const void *val, size_t val_len,
                            engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err) {
  (void)e, (void)err;
  ldb_segs_scan(v->segs, v->nsegs, val, val_len, fn, arg, st);
  return BFH_OK;
}

static int e_find_memtables(engine_t *e, engine_view_t *v, const void *val, size_t val_len,
                            uint64_t hash, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                            err_t *err) {
  (void)err;
  uint64_t seed = ldb_value_seed(((engine_ro_t *)e)->sync);
  ldb_segs_find(v->segs, v->nsegs, val, val_len, seed, hash, fn, arg, st);
  return BFH_OK;
}

/* ---- Ordered iteration ------------------------------------------------------------------ */

/* Log entries rank above every table entry (sequence numbers are below 2^56), in the order
   they were written. */
#define LOG_RANK (1ull << 56)

typedef struct gather {
  ldb_sorted_t *sorted;
  int nomem;
} gather_t;

static int gather_table_entry(void *arg, const ldb_entry_t *e) {
  gather_t *g = arg;
  if (ldb_sorted_add(g->sorted, e->key, e->key_len, e->val, e->val_len,
                     e->type == LDB_TYPE_VALUE, e->seq) != BFH_OK)
    return g->nomem = 1;
  return 0;
}

/* Every entry of s into g: its log chunks, then every table of its version. */
static int gather_state(engine_ro_t *r, const ro_state_t *s, gather_t *g, err_t *err) {
  uint64_t rank = LOG_RANK;
  for (size_t i = 0; i < s->nchunks && !g->nomem; i++) {
    const chunk_t *c = s->chunks[i];
    for (const uint8_t *p = c->data, *end = c->data + c->len; p < end && !g->nomem;) {
      int type;
      const uint8_t *k, *v;
      uint32_t kl, vl;
      p = decode_chunk_entry(p, &type, &k, &kl, &v, &vl);
      if (ldb_sorted_add(g->sorted, k, kl, v, vl, type == LDB_TYPE_VALUE, rank++) != BFH_OK)
        g->nomem = 1;
    }
  }
  int rc = BFH_OK;
  for (size_t i = 0; i < s->version.nfiles && rc == BFH_OK && !g->nomem; i++) {
    uint64_t number = s->version.files[i].number;
    if (r->read_hook) r->read_hook(r->read_hook_arg, number);
    char path[4200];
    ldb_table_path(r->path, number, path, sizeof path);
    rc = table_status(r, ldb_table_scan(r->io, path, gather_table_entry, g, NULL, err), number,
                      err);
  }
  if (rc == BFH_OK && g->nomem) rc = err_set(err, BFH_E_NOMEM, "%s: iterator: no memory", r->path);
  return rc;
}

static int e_iter_create(engine_t *e, engine_iter_t **it, err_t *err) {
  engine_ro_t *r = (engine_ro_t *)e;
  int rc = BFH_E_BUSY;
  for (int attempt = 0; attempt < ENGINE_LEVELDB_RO_ATTEMPTS && rc == BFH_E_BUSY; attempt++) {
    if (attempt) atomic_fetch_add(&r->retries, 1);
    ro_state_t *s;
    rc = current_state(r, &s, err);
    if (rc != BFH_OK) return rc;
    gather_t g = {ldb_sorted_create(), 0};
    if (!g.sorted) rc = err_set(err, BFH_E_NOMEM, "%s: iterator: no memory", r->path);
    if (rc == BFH_OK) rc = gather_state(r, s, &g, err);
    state_unref(s);
    if (rc == BFH_OK) return ldb_sorted_finish(g.sorted, it, err);
    ldb_sorted_destroy(g.sorted);
  }
  if (rc == BFH_E_BUSY)
    err_prefix(err, "iterator gave up after %d attempts (the database changed under each): ",
               ENGINE_LEVELDB_RO_ATTEMPTS);
  return rc;
}

#define e_stats NULL /* nothing written */

static const engine_ops_t ro_ops = ENGINE_OPS("leveldb-readonly");

/* ---- Searching -------------------------------------------------------------------------- */

typedef struct found {
  char **keys;
  size_t *lens;
  size_t n, cap;
  int nomem;
} found_t;

static int collect(void *arg, const void *key, size_t key_len) {
  found_t *f = arg;
  if (f->n == f->cap) {
    size_t c = f->cap ? 2 * f->cap : 64;
    char **k = realloc(f->keys, c * sizeof *k);
    if (k) f->keys = k;
    size_t *l = k ? realloc(f->lens, c * sizeof *l) : NULL;
    if (l) f->lens = l, f->cap = c;
    if (!l) return f->nomem = 1;
  }
  char *k = malloc(key_len ? key_len : 1);
  if (!k) return f->nomem = 1;
  memcpy(k, key, key_len);
  f->keys[f->n] = k;
  f->lens[f->n++] = key_len;
  return 0;
}

static void found_clear(found_t *f) {
  for (size_t i = 0; i < f->n; i++) free(f->keys[i]);
  f->n = 0;
  f->nomem = 0;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int engine_leveldb_ro_search(const search_ctx_t *c, const search_query_t *q, bfh_match_fn fn,
                             void *arg, bfh_search_stats *st, err_t *err) {
  engine_ro_t *r = (engine_ro_t *)c->engine;
  uint64_t t0 = now_ns();
  found_t f = {0};
  bfh_search_stats s;
  int rc = BFH_E_BUSY;
  for (int attempt = 0; attempt < ENGINE_LEVELDB_RO_ATTEMPTS && rc == BFH_E_BUSY; attempt++) {
    if (attempt) atomic_fetch_add(&r->retries, 1);
    found_clear(&f);
    rc = search_execute(c, q, collect, &f, &s, err); /* the same plan and hash every time */
    if (rc == BFH_OK && f.nomem) rc = err_set(err, BFH_E_NOMEM, "search: out of memory for keys");
  }
  if (rc == BFH_E_BUSY)
    err_prefix(err, "search gave up after %d attempts (the database changed under each): ",
               ENGINE_LEVELDB_RO_ATTEMPTS);
  s.results = 0;
  for (size_t i = 0; rc == BFH_OK && i < f.n; i++) {
    s.results++;
    if (fn && fn(arg, f.keys[i], f.lens[i])) break;
  }
  found_clear(&f);
  free(f.keys);
  free(f.lens);
  s.elapsed_ns = now_ns() - t0;
  if (st) *st = s;
  return rc;
}

/* ---- Opening ---------------------------------------------------------------------------- */

static int read_leaf(void *ctx, uint64_t number, const value_index_params_t *p,
                     index_leaf_read_t *out, err_t *err) {
  engine_ro_t *r = ctx;
  return ldb_leaf_read(r->io, r->path, number, p, out, err);
}

static int table_tag(void *ctx, uint64_t number, uint64_t *tag, err_t *err) {
  engine_ro_t *r = ctx;
  return ldb_table_tag_of(r->io, r->path, number, tag, err);
}

/* mkdir -p dir. */
static int make_dirs(const char *dir, err_t *err) {
  char p[4200];
  snprintf(p, sizeof p, "%s", dir);
  for (char *q = p + 1;; q++) {
    if (*q != '/' && *q != '\0') continue;
    char c = *q;
    *q = '\0';
    if (mkdir(p, 0755) != 0 && errno != EEXIST) return err_errno(err, errno, "%s: mkdir", p);
    if (!(*q = c)) return BFH_OK;
  }
}

/* The filter cache in the index directory (or none), as index_sync's source. */
static int source_init(engine_ro_t *r, const char *index_dir, err_t *err) {
  if (index_dir) {
    size_t n = strlen(index_dir) + sizeof("/" LEAF_CACHE_DIR);
    if (!(r->cache_dir = malloc(n))) return err_set(err, BFH_E_NOMEM, "%s: no memory", r->path);
    snprintf(r->cache_dir, n, "%s/%s", index_dir, LEAF_CACHE_DIR);
    int rc = make_dirs(r->cache_dir, err);
    if (rc != BFH_OK) return rc;
  }
  /* No delay: a reader is not told when a table dies young, and the cache is its own. */
  index_source_t src = {.read_leaf = read_leaf,
                        .ctx = r,
                        .cache_dir = r->cache_dir,
                        .table_tag = table_tag,
                        .cache_delay_ns = 0,
                        .io = r->io};
  return index_sync_set_source(r->sync, &src, err);
}

/* Removes the cache files of tables that are not live in the first state. */
static void clean_cache(engine_ro_t *r) {
  char **names;
  size_t n;
  err_t e;
  if (env_list_dir(r->io, r->cache_dir, &names, &n, &e) != BFH_OK) return;
  for (size_t i = 0; i < n; i++) {
    uint64_t num;
    if (ldb_file_number(names[i], "vf", &num) &&
        engine_tables_contain(r->state->tables, r->state->ntables, num))
      continue;
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", r->cache_dir, names[i]);
    (void)env_unlink(r->io, p, NULL);
  }
  env_names_free(names, n);
}

/* path must hold a LevelDB database, and not a bfh own-engine one. */
static int check_directory(const char *path, err_t *err) {
  char p[4200];
  snprintf(p, sizeof p, "%s/IDENTITY", path);
  if (access(p, F_OK) == 0)
    return err_set(err, BFH_E_INVALID,
                   "%s is a bfh (own engine) database (it has an IDENTITY file); open it with the "
                   "lsm engine",
                   path);
  snprintf(p, sizeof p, "%s/CURRENT", path);
  if (access(p, F_OK) != 0)
    return err_set(err, BFH_E_INVALID,
                   "%s: not a LevelDB database (no CURRENT file); a read-only open creates none",
                   path);
  return BFH_OK;
}

int engine_leveldb_ro_open(const char *path, const bfh_options *opt, struct env *io,
                           index_sync_t *sync, engine_t **out, err_t *err) {
  int rc = check_directory(path, err);
  if (rc != BFH_OK) return rc;
  engine_ro_t *r = calloc(1, sizeof *r);
  if (!r) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  r->base.ops = &ro_ops;
  r->io = io ? io : env_default();
  r->sync = sync;
  /* Half of the descriptors the process may open: the rest stay for everything else. */
  struct rlimit rl;
  r->pin_max = getrlimit(RLIMIT_NOFILE, &rl) != 0 ? 256
               : rl.rlim_cur == RLIM_INFINITY  ? 1u << 20
                                               : (unsigned long long)rl.rlim_cur / 2;
  pthread_mutex_init(&r->mu, NULL);
  if (!(r->path = strdup(path))) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  if (rc == BFH_OK && opt->index_dir) rc = make_dirs(opt->index_dir, err);
  if (rc == BFH_OK && sync) rc = source_init(r, opt->index_dir, err);
  if (rc == BFH_OK) {
    pthread_mutex_lock(&r->mu);
    rc = refresh(r, err);
    pthread_mutex_unlock(&r->mu);
  }
  if (rc == BFH_OK && r->cache_dir) clean_cache(r);
  if (rc != BFH_OK) {
    e_close(&r->base, NULL);
    return rc;
  }
  *out = &r->base;
  return BFH_OK;
}

void engine_leveldb_ro_set_read_hook(engine_t *e, void (*fn)(void *arg, uint64_t number),
                                     void *arg) {
  engine_ro_t *r = (engine_ro_t *)e;
  r->read_hook = fn;
  r->read_hook_arg = arg;
}

void engine_leveldb_ro_set_logs_hook(engine_t *e, void (*fn)(void *arg), void *arg) {
  engine_ro_t *r = (engine_ro_t *)e;
  r->logs_hook = fn;
  r->logs_hook_arg = arg;
}

uint64_t engine_leveldb_ro_retries(engine_t *e) {
  return atomic_load(&((engine_ro_t *)e)->retries);
}

void engine_leveldb_ro_set_pin_max(engine_t *e, uint64_t n) {
  engine_ro_t *r = (engine_ro_t *)e;
  pthread_mutex_lock(&r->mu);
  r->pin_max = n;
  r->version_changed = 1; /* the next refresh makes a new state, pinned anew */
  pthread_mutex_unlock(&r->mu);
}

uint64_t engine_leveldb_ro_pinned(engine_t *e) {
  return atomic_load(&((engine_ro_t *)e)->pinned);
}
