/* The value index's probes: which tables may hold a value, by the leaves one by one, by the
 * hierarchy or by the bit-sliced index; a search's selection of the tables of its view; the
 * index's statistics. Each first applies the queued adds and removes (value_index.c), then
 * holds the read lock.
 */
#include <string.h>

#include "lsm_hooks/index/value_index_private.h"

void value_index_probe(const value_index_t *vi, const void *val, size_t len, probe_t *out) {
  probe_init(out, bfh_value_hash(val, len, vi->params.seed), vi->params.m, vi->params.k);
}

int value_index_by_leaves(value_index_t *vi, const probe_t *p, u64vec_t *out, probe_stats_t *st) {
  for (size_t i = 0; i < vi->n; i++) {
    if (st) st->leaf_probes++;
    if (value_index_leaf_probe(vi, vi->leaves[i], p)) {
      if (st) st->leaf_positives++;
      int rc = u64vec_push(out, vi->leaves[i]->number);
      if (rc != BFH_OK) return rc;
    }
  }
  return BFH_OK;
}

int value_index_by_hierarchy(value_index_t *vi, const probe_t *p, u64vec_t *out,
                             probe_stats_t *st) {
  return hierarchy_search(vi->hier, p, out, st);
}

int value_index_by_sliced(value_index_t *vi, const probe_t *p, u64vec_t *out, probe_stats_t *st) {
  return sliced_search(vi->sliced, p, out, st);
}

static int candidates_locked(value_index_t *vi, value_index_by_fn by, const probe_t *p,
                             u64vec_t *out, probe_stats_t *st, err_t *err) {
  int rc = by(vi, p, out, st);
  if (rc != BFH_OK) return err_set(err, rc, "value index: candidate search failed");
  return BFH_OK;
}

int value_index_candidates(value_index_t *vi, value_index_by_fn by, const probe_t *p, u64vec_t *out,
                           probe_stats_t *st, err_t *err) {
  (void)value_index_apply(vi, NULL);
  pthread_rwlock_rdlock(&vi->lock);
  int rc = candidates_locked(vi, by, p, out, st, err);
  pthread_rwlock_unlock(&vi->lock);
  return rc;
}

int value_index_select(value_index_t *vi, value_index_by_fn by, const probe_t *p,
                       const uint64_t *numbers, size_t n, uint8_t *scan, probe_stats_t *st,
                       err_t *err) {
  u64vec_t cand;
  u64vec_init(&cand);
  (void)value_index_apply(vi, NULL);
  pthread_rwlock_rdlock(&vi->lock);
  int rc = candidates_locked(vi, by, p, &cand, st, err);
  if (rc == BFH_OK) {
    u64vec_sort(&cand);
    for (size_t i = 0; i < n; i++)
      scan[i] =
          u64_sorted_contains(cand.v, cand.n, numbers[i]) || !value_index_leaf_find(vi, numbers[i]);
  }
  pthread_rwlock_unlock(&vi->lock);
  u64vec_release(&cand);
  return rc;
}

void value_index_get_stats(value_index_t *vi, value_index_stats_t *st) {
  memset(st, 0, sizeof *st);
  (void)value_index_apply(vi, NULL);
  pthread_rwlock_rdlock(&vi->lock);
  st->leaves = vi->n;
  uint64_t per_leaf = value_filter_serialized_size(vi->params.m);
  for (size_t i = 0; i < vi->n; i++)
    st->leaf_bytes += value_index_leaf_mem_bytes(vi, vi->leaves[i]);
  st->leaf_bytes_total = vi->n * per_leaf;
  st->internal_bytes = hierarchy_size_in_bytes(vi->hier);
  st->sliced_bytes = sliced_size_in_bytes(vi->sliced);
  st->height = hierarchy_height(vi->hier);
  st->mean_fill = vi->n ? (double)vi->popcount_sum / ((double)vi->n * (double)vi->params.m) : 0;
  pthread_rwlock_unlock(&vi->lock);
}
