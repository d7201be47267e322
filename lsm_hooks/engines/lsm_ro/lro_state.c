/* States (lro_internal.h): a refreshed state holds every table of its version open (a
   table_t reference each, shared with the previous state when the table was in it), so that a
   compaction that deletes a table cannot take it from a search of the state, and sees each
   log's memtable up to the last entry read before it was made. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "filters/hash.h"
#include "lsm/filename.h"
#include "lsm/internal_key.h"
#include "lsm_hooks/engines/lsm_ro/lro_internal.h"

#define ID_SEED 0x6c726f6669643031ull /* "lrofid01" */

void lro_state_unref(lro_state_t *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  for (size_t i = 0; s->tables && i < s->ntables; i++) table_unref(s->tables[i].t);
  for (size_t i = 0; i < s->nmems; i++) memtable_unref(s->mems[i].mem);
  free(s->tables);
  free(s->list);
  free(s->get_order);
  free(s->keys);
  free(s->mems);
  free(s);
}

const lro_table_t *lro_state_table(const lro_state_t *s, uint64_t number) {
  size_t lo = 0, hi = s->ntables;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->tables[mid].number < number)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->ntables && s->tables[lo].number == number ? &s->tables[lo] : NULL;
}

static int cmp_file(const void *a, const void *b) {
  uint64_t x = ((const lro_file_t *)a)->number, y = ((const lro_file_t *)b)->number;
  return x < y ? -1 : x > y;
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

/* Holds table i of s open: the previous state's reader of the same file, or a new one. The
   file's identity (device and inode) is taken before the open and checked after it, so that
   the reader is known to be of the file the identity names. REQUIRES mu. */
static int pin_table(lro_t *r, lro_state_t *s, size_t i, err_t *err) {
  lro_table_t *t = &s->tables[i];
  const lro_table_t *prev = r->state ? lro_state_table(r->state, t->number) : NULL;
  char path[LSM_PATH_MAX];
  table_file_path(r->path, t->number, path, sizeof path);
  uint64_t size;
  env_file_id_t id;
  int rc = env_path_stat(r->io, path, &size, &id, err);
  if (rc == BFH_NOT_FOUND) return table_gone(r, t->number, err);
  if (rc != BFH_OK) return rc;
  uint64_t fid = bfh_hash64(&id, sizeof id, ID_SEED);
  fid = fid ? fid : 1;
  if (prev && prev->id == fid) {
    table_ref(prev->t);
    t->t = prev->t;
    t->id = fid;
    return BFH_OK;
  }
  rc = table_open(r->io, path, t->number, &t->t, err);
  if (rc == BFH_NOT_FOUND || (rc != BFH_OK && !env_exists(r->io, path)))
    return table_gone(r, t->number, err);
  if (rc != BFH_OK) return rc;
  env_file_id_t now;
  if (env_path_stat(r->io, path, &size, &now, err) != BFH_OK || !env_file_id_equal(id, now))
    return AGAIN; /* replaced between the stat and the open */
  t->id = fid;
  return BFH_OK;
}

/* s->tables from r's version, sorted by number, each with its user-key bounds. */
static int fill_tables(lro_t *r, lro_state_t *s, err_t *err) {
  const lro_version_t *v = &r->version;
  lro_file_t *files = malloc((v->n + 1) * sizeof *files);
  size_t bytes = 0;
  for (size_t i = 0; i < v->n; i++) bytes += v->files[i].smallest_len + v->files[i].largest_len;
  s->tables = calloc(v->n + 1, sizeof *s->tables);
  s->list = calloc(v->n + 1, sizeof *s->list);
  s->get_order = calloc(v->n + 1, sizeof *s->get_order);
  s->keys = malloc(bytes + 1);
  if (!files || !s->tables || !s->list || !s->get_order || !s->keys) {
    free(files);
    return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  }
  memcpy(files, v->files, v->n * sizeof *files);
  qsort(files, v->n, sizeof *files, cmp_file);
  uint8_t *k = s->keys;
  for (size_t i = 0; i < v->n; i++) {
    const lro_file_t *f = &files[i];
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
    s->list[i] = (engine_table_t){.number = f->number, .size = f->size, .level = f->level};
  }
  s->ntables = v->n;
  free(files);
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
  *out = s;
  return BFH_OK;
}
