/* The value index's probes: which tables may hold a value, by the leaves one by one, by the
 * hierarchy or by the bit-sliced index; a search's selection of the tables of its view; the
 * index's statistics. Each first applies the queued adds and removes (value_index.c), then
 * holds the read lock.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index/persisted_index.h"
#include "index/value_index_private.h"

void value_index_probe(const value_index_t *vi, const void *val, size_t len, probe_t *out) {
  probe_init(out, bfh_value_hash(val, len, vi->params.seed), vi->params.m, vi->params.k);
}

/* A leaf's probe; lean: its column in its fold group's slices. */
static int leaf_says_maybe(value_index_t *vi, leaf_t *l, const probe_t *p) {
  if (!value_index_lean(vi)) return value_index_leaf_probe(vi, l, p);
  const fold_group_t *g = &vi->groups[l->group];
  probe_t q;
  value_index_fold_probe(p, &g->map, &q);
  return sliced_probe_one(g->sliced, l->number, &q) != 0; /* absent (never): maybe */
}

int value_index_by_leaves(value_index_t *vi, const probe_t *p, u64vec_t *out, probe_stats_t *st) {
  for (size_t i = 0; i < vi->n; i++) {
    if (st) st->leaf_probes++;
    if (leaf_says_maybe(vi, vi->leaves[i], p)) {
      if (st) st->leaf_positives++;
      int rc = u64vec_push(out, vi->leaves[i]->number);
      if (rc != BFH_OK) return rc;
    }
  }
  return BFH_OK;
}

int value_index_by_hierarchy(value_index_t *vi, const probe_t *p, u64vec_t *out,
                             probe_stats_t *st) {
  if (value_index_lean(vi)) return value_index_by_sliced(vi, p, out, st); /* no hierarchy */
  return hierarchy_search(vi->hier, p, out, st);
}

int value_index_by_sliced(value_index_t *vi, const probe_t *p, u64vec_t *out, probe_stats_t *st) {
  if (!value_index_lean(vi)) return sliced_search(vi->sliced, p, out, st);
  /* Every group's rows asked for first: their misses overlap instead of following one
     another group by group (k rows each: 8 with the lean layout's k). */
  for (size_t g = 0; g < vi->ngroups; g++) {
    if (sliced_leaf_count(vi->groups[g].sliced) == 0) continue;
    probe_t q;
    value_index_fold_probe(p, &vi->groups[g].map, &q);
    sliced_prefetch(vi->groups[g].sliced, &q);
  }
  for (size_t g = 0; g < vi->ngroups; g++) {
    if (sliced_leaf_count(vi->groups[g].sliced) == 0) continue;
    probe_t q;
    value_index_fold_probe(p, &vi->groups[g].map, &q);
    int rc = sliced_search(vi->groups[g].sliced, &q, out, st);
    if (rc != BFH_OK) return rc;
  }
  return BFH_OK;
}

/* A search applies the queue itself unless the engine has an applier and the layout is lean
   (value_index_set_applier): then the tables whose adds wait have no leaf yet, and it reads
   them by their maps. */
static void apply_unless_applier(value_index_t *vi) {
  if (!atomic_load(&vi->applier) || !value_index_lean(vi)) (void)value_index_apply(vi, NULL);
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
  apply_unless_applier(vi);
  pthread_rwlock_rdlock(&vi->lock);
  int rc = candidates_locked(vi, by, p, &cand, st, err);
  if (rc == BFH_OK) {
    u64vec_sort(&cand);
    /* The maps of the candidates: their first cache miss (the sketch byte) overlaps the loop
       below instead of each following the last in the search's reads. */
    if (cand.n && value_index_lean(vi)) block_index_prefetch(vi->blocks, cand.v, cand.n, p->hash);
    size_t missing = 0;
    if (cand.n <= 4) { /* the usual case: compared with each, no branch to mispredict */
      uint64_t c[4] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
      for (size_t j = 0; j < cand.n; j++) c[j] = cand.v[j];
      for (size_t i = 0; i < n; i++) {
        uint64_t x = numbers[i];
        int leaf = value_index_has_leaf(vi, x);
        scan[i] = (uint8_t)(!leaf | (x == c[0]) | (x == c[1]) | (x == c[2]) | (x == c[3]));
        missing += (size_t)!leaf;
      }
    } else {
      for (size_t i = 0; i < n; i++) {
        int leaf = value_index_has_leaf(vi, numbers[i]);
        scan[i] = (uint8_t)(!leaf || u64_sorted_contains(cand.v, cand.n, numbers[i]));
        missing += (size_t)!leaf;
      }
    }
    /* Candidates whose map rules the value out from memory (its sketch: the bytes prefetched
       above) are not read: the search would probe the map and stop there. */
    uint8_t out4[4], *out = cand.n <= 4 ? out4 : (value_index_lean(vi) ? malloc(cand.n) : NULL);
    if (out && cand.n && value_index_lean(vi)) {
      block_index_rule_out(vi->blocks, cand.v, cand.n, p->hash, out);
      size_t nout = 0;
      for (size_t j = 0; j < cand.n; j++) nout += out[j];
      for (size_t i = 0; nout && i < n; i++) {
        if (!scan[i]) continue;
        size_t j = 0; /* cand is sorted */
        size_t lo = 0, hi = cand.n;
        while (lo < hi) {
          size_t mid = lo + (hi - lo) / 2;
          if (cand.v[mid] < numbers[i]) lo = mid + 1; else hi = mid;
        }
        j = lo;
        if (j < cand.n && cand.v[j] == numbers[i] && out[j] && value_index_has_leaf(vi, numbers[i])) {
          scan[i] = 0;
          nout--;
        }
      }
    }
    if (out != out4) free(out);
    /* Tables without a leaf yet: the persisted index answers for those it covers. */
    uint8_t *ask = vi->pidx && missing ? malloc(n) : NULL;
    if (ask) {
      for (size_t i = 0; i < n; i++) ask[i] = (uint8_t)!value_index_has_leaf(vi, numbers[i]);
      persisted_index_select(vi->pidx, p, numbers, n, ask, scan, vi->blocks, NULL);
    }
    free(ask);
  }
  pthread_rwlock_unlock(&vi->lock);
  u64vec_release(&cand);
  return rc;
}

void value_index_get_plan_stats(value_index_t *vi, value_index_stats_t *st) {
  memset(st, 0, sizeof *st);
  apply_unless_applier(vi);
  pthread_rwlock_rdlock(&vi->lock);
  st->leaves = vi->n;
  double fill_sum = 0;
  for (size_t g = 0; g < vi->ngroups; g++) fill_sum += vi->groups[g].fill_sum;
  st->mean_fill = vi->n ? (double)vi->popcount_sum / ((double)vi->n * (double)vi->params.m) : 0;
  st->probe_fill = value_index_lean(vi) ? (vi->n ? fill_sum / (double)vi->n : 0) : st->mean_fill;
  if (vi->pidx) {
    uint64_t covered = persisted_index_bound(vi->pidx), with_leaf = 0;
    for (size_t i = 0; i < vi->n; i++)
      with_leaf += (uint64_t)persisted_index_covers(vi->pidx, vi->leaves[i]->number);
    st->persisted = covered - with_leaf;
  }
  pthread_rwlock_unlock(&vi->lock);
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
  st->sliced_row_bits = vi->params.m * sliced_capacity(vi->sliced);
  double fill_sum = 0;
  for (size_t g = 0; g < vi->ngroups; g++) {
    st->sliced_row_bits += vi->groups[g].mf * sliced_capacity(vi->groups[g].sliced);
    st->sliced_bytes += sliced_size_in_bytes(vi->groups[g].sliced);
    fill_sum += vi->groups[g].fill_sum;
  }
  st->sliced_groups = value_index_lean(vi) ? vi->ngroups : 1;
  st->height = hierarchy_height(vi->hier);
  st->mean_fill = vi->n ? (double)vi->popcount_sum / ((double)vi->n * (double)vi->params.m) : 0;
  st->probe_fill = value_index_lean(vi) ? (vi->n ? fill_sum / (double)vi->n : 0) : st->mean_fill;
  st->load_peak_bytes = atomic_load(&vi->held_peak);
  st->fold_damaged = vi->fold_damaged;
  memcpy(st->fold_damage_msg, vi->fold_damage_msg, sizeof st->fold_damage_msg);
  /* What the leaf records hold besides their words (leaf_bytes): the record, its path. */
  uint64_t records = sizeof *vi + vi->cap * (sizeof *vi->leaves + sizeof *vi->numbers) +
                     vi->capgroups * sizeof *vi->groups + vi->nbits_words * sizeof *vi->leaf_bits;
  for (size_t i = 0; i < vi->n; i++)
    records += sizeof(leaf_t) + (vi->leaves[i]->path ? strlen(vi->leaves[i]->path) + 1 : 0);
  pthread_mutex_lock(&vi->pend_mu);
  records += u64_map_size_in_bytes(&vi->members) + vi->cappend * sizeof *vi->pend;
  pthread_mutex_unlock(&vi->pend_mu);
  pthread_rwlock_unlock(&vi->lock);
  block_index_stats_t bs;
  block_index_get_stats(vi->blocks, &bs);
  st->block_bytes = bs.held_bytes;
  if (vi->pidx) { /* the bound tables that have no leaf yet */
    pthread_rwlock_rdlock(&vi->lock);
    uint64_t covered = persisted_index_bound(vi->pidx), with_leaf = 0;
    for (size_t i = 0; i < vi->n; i++)
      with_leaf += (uint64_t)persisted_index_covers(vi->pidx, vi->leaves[i]->number);
    st->persisted = covered - with_leaf;
    records += persisted_index_memory(vi->pidx); /* its directory and the chunks read */
    pthread_rwlock_unlock(&vi->lock);
  }
  st->index_bytes =
      st->leaf_bytes + records + st->internal_bytes + st->sliced_bytes + st->block_bytes;
}
