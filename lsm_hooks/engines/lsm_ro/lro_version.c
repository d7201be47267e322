/* The live tables as the MANIFEST's edits leave them (lro_internal.h): a flat list, changed
   edit by edit; a state sorts it once when it is made. */
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/lsm_ro/lro_internal.h"

static void file_release(lro_file_t *f) {
  free(f->smallest);
  free(f->largest);
}

void lro_version_release(lro_version_t *v) {
  for (size_t i = 0; i < v->n; i++) file_release(&v->files[i]);
  free(v->files);
  memset(v, 0, sizeof *v);
}

static ptrdiff_t find(const lro_version_t *v, uint64_t number) {
  for (size_t i = 0; i < v->n; i++)
    if (v->files[i].number == number) return (ptrdiff_t)i;
  return -1;
}

static int add(lro_version_t *v, int level, const lsm_file_meta_t *m, const char *where,
               err_t *err) {
  if (find(v, m->number) >= 0)
    return err_set(err, BFH_E_CORRUPT, "%s: adds table %06llu, live already", where,
                   (unsigned long long)m->number);
  if (v->n == v->cap) {
    size_t cap = v->cap ? 2 * v->cap : 64;
    lro_file_t *p = realloc(v->files, cap * sizeof *p);
    if (!p) return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", where);
    v->files = p;
    v->cap = cap;
  }
  lro_file_t f = {.number = m->number, .size = m->size, .level = level};
  f.smallest = malloc(m->smallest_len ? m->smallest_len : 1);
  f.largest = malloc(m->largest_len ? m->largest_len : 1);
  if (!f.smallest || !f.largest) {
    file_release(&f);
    return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", where);
  }
  memcpy(f.smallest, m->smallest, m->smallest_len);
  memcpy(f.largest, m->largest, m->largest_len);
  f.smallest_len = m->smallest_len;
  f.largest_len = m->largest_len;
  v->files[v->n++] = f;
  return BFH_OK;
}

int lro_version_apply(lro_version_t *v, const lsm_version_edit_t *e, const char *where,
                      err_t *err) {
  for (size_t i = 0; i < e->ndeleted; i++) {
    ptrdiff_t j = find(v, e->deleted[i].number);
    if (j < 0)
      return err_set(err, BFH_E_CORRUPT, "%s: deletes table %06llu, not live", where,
                     (unsigned long long)e->deleted[i].number);
    file_release(&v->files[j]);
    v->files[j] = v->files[--v->n];
  }
  for (size_t i = 0; i < e->nadded; i++) {
    int rc = add(v, e->added[i].level, e->added[i].meta, where, err);
    if (rc != BFH_OK) return rc;
  }
  if (e->has_log_number) {
    v->has_log_number = 1;
    v->log_number = e->log_number;
  }
  return BFH_OK;
}
