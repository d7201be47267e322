/* index_sync_t's pulled reports (an engine without a build hook, stock LevelDB, lists its
 * live tables): tables new to the list are marked to be read, tables missing from it are
 * gone; a view pins the epoch of its list until it is unpinned. See index_sync.h.
 */
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "index/index_sync_private.h"
#include "util/clock.h"

static int cmp_table(const void *a, const void *b) {
  uint64_t x = ((const index_table_t *)a)->number, y = ((const index_table_t *)b)->number;
  return x < y ? -1 : x > y;
}

/* r's number names another file than the one its leaf describes: the leaf (and block
   filter, and cache bytes not written yet) go at once, and the table is read again. Its cache
   file is left: it is bound to the old table's tag, so the next load finds it stale. A view
   still reading the old file meanwhile scans the table (it has no leaf). REQUIRES mu. */
static void forget_leaf(index_sync_t *s, record_t *r, uint64_t size, uint64_t now) {
  if (r->state == REC_INDEXED) (void)value_index_remove(s->index, r->number);
  /* The persisted index was bound to the old file, and a map a search took from it describes
     that file: both go. */
  int was_bound = value_index_persisted_unbind(s->index, r->number);
  if ((r->early_blocks && r->state != REC_INDEXED) || was_bound)
    block_index_remove(value_index_blocks(s->index), r->number);
  r->early_blocks = 0;
  index_sync_record_release(r);
  r->state = REC_TO_READ;
  r->source = INDEX_LEAF_NONE;
  r->wants_blocks = 0;
  r->met = 0;
  r->size = size;
  r->live_ns = now;
  s->stats.tables_replaced++;
}

int index_sync_tables_listed(index_sync_t *s, const index_table_t *live, size_t n,
                             uint64_t *view_epoch, err_t *err) {
  index_table_t *sorted = malloc((n ? n : 1) * sizeof *sorted);
  if (!sorted) return err_set(err, BFH_E_NOMEM, "index sync: out of memory");
  if (n) memcpy(sorted, live, n * sizeof *sorted); /* live may be NULL when n == 0 */
  qsort(sorted, n, sizeof *sorted, cmp_table);
  u64vec_t unlink;
  u64vec_init(&unlink);
  int rc = BFH_OK;
  pthread_mutex_lock(&s->mu);
  if (view_epoch && s->npins == s->pins_cap) {
    size_t c = s->pins_cap ? 2 * s->pins_cap : 16;
    uint64_t *p = realloc(s->pins, c * sizeof *p);
    if (p) {
      s->pins = p;
      s->pins_cap = c;
    }
  }
  if (s->n + n > s->cap) { /* room for every new record up front: nothing fails halfway */
    size_t c = s->cap ? s->cap : 64;
    while (c < s->n + n) c *= 2;
    record_t *r = realloc(s->recs, c * sizeof *r);
    if (r) {
      s->recs = r;
      s->cap = c;
    }
  }
  if (s->n + n > s->cap || (view_epoch && s->npins == s->pins_cap)) {
    rc = err_set(err, BFH_E_NOMEM, "index sync: out of memory");
    goto out;
  }
  s->epoch++;
  /* Gone: live records missing from the list (a merge of two sorted lists). */
  for (size_t i = 0, j = 0; i < s->n; i++) {
    record_t *r = &s->recs[i];
    while (j < n && sorted[j].number < r->number) j++;
    if (r->state != REC_BUILT && (j == n || sorted[j].number != r->number))
      index_sync_mark_gone(s, r);
  }
  /* New: listed tables without a record; replaced: listed tables whose number names another
     file now. */
  uint64_t now = clock_now_ns();
  for (size_t j = 0; j < n; j++) {
    record_t *r = index_sync_find_or_insert(s, sorted[j].number); /* cannot fail: room was made */
    if (sorted[j].id && r->id && r->id != sorted[j].id && !r->gone_epoch && r->state != REC_BUILT)
      forget_leaf(s, r, sorted[j].size, now);
    if (sorted[j].id) r->id = sorted[j].id;
    index_sync_make_live(s, r, sorted[j].size, now);
    /* A view's searches read a table without a leaf whole: it is due at once. */
    if (view_epoch && r->state == REC_TO_READ && !r->gone_epoch && !r->met) {
      r->met = 1;
      s->met_new = 1;
    }
  }
  if (view_epoch) {
    *view_epoch = s->epoch;
    s->pins[s->npins++] = s->epoch;
  }
  index_sync_remove_gone(s, &unlink);
out:
  pthread_mutex_unlock(&s->mu);
  index_sync_unlink_caches(s, &unlink);
  free(sorted);
  return rc;
}

void index_sync_view_unpin(index_sync_t *s, uint64_t epoch) {
  u64vec_t unlink;
  u64vec_init(&unlink);
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->npins; i++)
    if (s->pins[i] == epoch) {
      s->pins[i] = s->pins[--s->npins];
      break;
    }
  index_sync_remove_gone(s, &unlink);
  pthread_mutex_unlock(&s->mu);
  index_sync_unlink_caches(s, &unlink);
}
