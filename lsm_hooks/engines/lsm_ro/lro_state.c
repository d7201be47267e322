/* States (lro_internal.h): a refreshed state holds every table of its version open (a pin
   each, shared with the previous state when the table was in it), so that a compaction that
   deletes a table cannot take it from a search of the state; a table's reader is made from
   its pinned file when a read first needs it, so that an open reads no table's index. A state
   sees each log's memtable up to the last entry read before it was made. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "filters/hash.h"
#include "lsm/filename.h"
#include "lsm/internal_key.h"
#include "lsm_hooks/engines/lsm_ro/lro_internal.h"
#include "index/index_sync.h"
#include "util/sort.h"

#define ID_SEED 0x6c726f6669643031ull /* "lrofid01" */

static void pin_unref(lro_pin_t *p) {
  if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
  table_unref(atomic_load(&p->t));
  env_rfile_close(p->f);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

int lro_table_reader(const lro_table_t *t, table_t **out, err_t *err) {
  lro_pin_t *p = t->pin;
  if ((*out = atomic_load(&p->t))) return BFH_OK;
  pthread_mutex_lock(&p->mu);
  int rc = BFH_OK;
  table_t *tt = atomic_load(&p->t);
  if (!tt && (rc = table_open_file(p->f, p->path, p->number, &tt, err)) == BFH_OK) {
    p->f = NULL;                                /* the reader's now */
    if (p->mapped) (void)table_read_mapped(tt); /* else, or if it cannot map: pread */
    atomic_store(&p->t, tt);
  }
  pthread_mutex_unlock(&p->mu);
  *out = tt;
  return rc;
}

int lro_table_stamp(const lro_table_t *t, uint64_t *stamp, err_t *err) {
  lro_pin_t *p = t->pin;
  pthread_mutex_lock(&p->mu);
  int rc = atomic_load(&p->t) ? err_set(err, BFH_E_BUSY, "%s: read already", p->path)
                              : index_sync_rfile_stamp(p->f, p->path, stamp, err);
  pthread_mutex_unlock(&p->mu);
  return rc;
}

void lro_state_unref(lro_state_t *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  for (size_t i = 0; s->tables && i < s->ntables; i++) pin_unref(s->tables[i].pin);
  for (size_t i = 0; i < s->nmems; i++) memtable_unref(s->mems[i].mem);
  free(s->tables);
  free(s->list);
  free(s->get_order);
  free(s->keys);
  free(s->mems);
  free(s);
}

const lro_table_t *lro_state_table(const lro_state_t *s, uint64_t number) {
  size_t i = U64_LOWER_BOUND(s->tables, s->ntables, number, number);
  return i < s->ntables && s->tables[i].number == number ? &s->tables[i] : NULL;
}

/* The order a get reads the tables in: level 0 newest (highest number) first, then each
   deeper level by smallest key (its tables do not overlap). */
static int cmp_get_order(const void *a, const void *b) {
  const lro_table_t *x = *(const lro_table_t *const *)a, *y = *(const lro_table_t *const *)b;
  if (x->level != y->level) return x->level - y->level;
  if (x->level == 0) return x->number < y->number ? 1 : x->number > y->number ? -1 : 0;
  return bytewise_compare(x->smallest, x->smallest_len, y->smallest, y->smallest_len);
}

/* A table of the version was gone when opened: deleted by a compaction whose edit the next
   MANIFEST read sees (AGAIN), unless that read finds nothing new and the same table gone
   again: then the MANIFEST names a table that does not exist (damage). REQUIRES mu. */
static int table_gone(lro_t *r, uint64_t number, err_t *err) {
  if (r->missing == number && r->missing_resume == r->manifest_resume)
    return err_set(err, BFH_E_CORRUPT,
                   "%s: table %06llu, named by the live version of %s, is missing", r->path,
                   (unsigned long long)number, r->manifest);
  r->missing = number;
  r->missing_resume = r->manifest_resume;
  return AGAIN;
}

static uint64_t fold_id(env_file_id_t id) {
  uint64_t h = bfh_hash64(&id, sizeof id, ID_SEED);
  return h ? h : 1;
}

/* The previous state's pin of table t when it is still the file t's name gives (checked by
   its identity only after the MANIFEST was read anew: a database replaced at the path), or
   NULL. REQUIRES mu. */
static lro_pin_t *previous_pin(lro_t *r, const lro_table_t *t, const char *path) {
  const lro_table_t *prev = r->state ? lro_state_table(r->state, t->number) : NULL;
  if (!prev || !r->recheck) return prev ? prev->pin : NULL;
  uint64_t size;
  env_file_id_t id;
  err_t e;
  if (env_path_stat(r->io, path, &size, &id, &e) != BFH_OK || !env_file_id_equal(id, prev->pin->id))
    return NULL;
  return prev->pin;
}

/* Holds table i of s (at path) open: the previous state's pin, or a new one. REQUIRES mu. */
static int pin_table_at(lro_t *r, lro_state_t *s, size_t i, const char *path, err_t *err) {
  lro_table_t *t = &s->tables[i];
  lro_pin_t *p = previous_pin(r, t, path);
  if (p) {
    atomic_fetch_add(&p->refs, 1);
    t->pin = p;
    t->id = fold_id(p->id);
    return BFH_OK;
  }
  size_t n = strlen(path) + 1;
  if (!(p = calloc(1, sizeof *p + n))) return err_set(err, BFH_E_NOMEM, "%s: no memory", r->path);
  memcpy(p->path, path, n);
  int rc = env_open_read(r->io, path, &p->f, err);
  int e = errno;
  if (rc != BFH_OK) {
    free(p);
    if (rc == BFH_NOT_FOUND || !env_exists(r->io, path)) return table_gone(r, t->number, err);
    if (e == EMFILE) /* every live table is held open: the process may open too few files */
      err_prefix(err,
                 "%s: %zu live tables, each held open (raise RLIMIT_NOFILE: ulimit -n): ", r->path,
                 s->ntables);
    return rc;
  }
  atomic_init(&p->refs, 1);
  atomic_init(&p->t, NULL);
  pthread_mutex_init(&p->mu, NULL);
  p->id = env_rfile_id(p->f);
  p->number = t->number;
  p->mapped = r->mmap_reads;
  t->pin = p;
  t->id = fold_id(p->id);
  return BFH_OK;
}

static int pin_table(lro_t *r, lro_state_t *s, size_t i, err_t *err) {
  char *path = table_file_path(r->path, s->tables[i].number);
  if (!path) return err_set(err, BFH_E_NOMEM, "%s: no memory", r->path);
  int rc = pin_table_at(r, s, i, path, err);
  free(path);
  return rc;
}

/* s->tables from r's version, sorted by number, each with its user-key bounds. */
static int fill_tables(lro_t *r, lro_state_t *s, err_t *err) {
  const lro_version_t *v = &r->version;
  size_t bytes = 0;
  for (size_t i = 0; i < v->n; i++) bytes += v->files[i].smallest_len + v->files[i].largest_len;
  s->tables = calloc(v->n + 1, sizeof *s->tables);
  s->list = calloc(v->n + 1, sizeof *s->list);
  s->get_order = calloc(v->n + 1, sizeof *s->get_order);
  s->keys = malloc(bytes + 1);
  if (!s->tables || !s->list || !s->get_order || !s->keys)
    return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  uint8_t *k = s->keys;
  for (size_t i = 0; i < v->n; i++) {
    const lro_file_t *f = &v->files[i]; /* sorted by number */
    lro_table_t *t = &s->tables[i];
    *t = (lro_table_t){.number = f->number, .size = f->size, .level = f->level};
    /* Internal keys: the user key, then an 8-byte tag. */
    t->smallest_len = f->smallest_len >= 8 ? f->smallest_len - 8 : 0;
    t->largest_len = f->largest_len >= 8 ? f->largest_len - 8 : 0;
    memcpy(k, f->smallest, t->smallest_len);
    t->smallest = k;
    k += t->smallest_len;
    memcpy(k, f->largest, t->largest_len);
    t->largest = k;
    k += t->largest_len;
    s->list[i] = (engine_table_t){
        .number = f->number,
        .size = f->size,
        .level = f->level,
        .max_seq = f->max_seq == LSM_SEQ_UNKNOWN ? ENGINE_SEQ_UNKNOWN : f->max_seq};
  }
  s->ntables = v->n;
  return BFH_OK;
}

/* s->mems: every log's memtable up to what was read of it, newest log first. */
static int fill_mems(lro_t *r, lro_state_t *s, err_t *err) {
  s->mems = calloc(r->nlogs + 1, sizeof *s->mems);
  if (!s->mems) return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  for (size_t i = r->nlogs; i-- > 0;) {
    const lro_log_t *l = &r->logs[i];
    if (!l->mem || !l->last_seq) continue;
    memtable_ref(l->mem);
    s->mems[s->nmems++] = (lro_mem_t){l->mem, l->last_seq};
  }
  return BFH_OK;
}

int lro_state_make(lro_t *r, lro_state_t **out, err_t *err) {
  lro_state_t *s = calloc(1, sizeof *s);
  if (!s) return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  atomic_init(&s->refs, 1);
  int rc = fill_tables(r, s, err);
  for (size_t i = 0; i < s->ntables && rc == BFH_OK; i++) rc = pin_table(r, s, i, err);
  if (rc == BFH_OK) rc = fill_mems(r, s, err);
  if (rc != BFH_OK) {
    lro_state_unref(s);
    return rc;
  }
  for (size_t i = 0; i < s->ntables; i++) s->get_order[i] = &s->tables[i];
  qsort(s->get_order, s->ntables, sizeof *s->get_order, cmp_get_order);
  r->missing = 0;
  r->recheck = 0;
  *out = s;
  return BFH_OK;
}
