/* value_index_t: leaves (one value filter per live table), the hierarchy and the bit-sliced
 * index over them, under one rwlock. See value_index.h; the files of the index are listed in
 * value_index_private.h. This one: the index's life, and its maintenance.
 *
 * Adds and removes are queued and applied in one batch before the next query, or by the
 * engine's applier after each change (see value_index_apply and value_index_set_applier in
 * the header): the engine's threads pay O(1) per table when they report, and the many
 * tables a compaction burst creates and drops between two applies cost the index nothing.
 * Applying them inserts and removes leaves in the leaf store (value_index_leaves.c), the
 * hierarchy and the bit-sliced index, incrementally.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "filters/bits.h"
#include "index/persisted_index.h"
#include "index/value_index_private.h"

/* ---- Lifecycle ---------------------------------------------------------------------- */

value_index_t *value_index_create(const value_index_params_t *p, err_t *err) {
  if (!p || p->m < VALUE_FILTER_MIN_BITS || p->k < 1 || p->k > BFH_MAX_HASHES || p->order < 2) {
    err_set(err, BFH_E_INVALID,
            "value index: bad parameters (m %llu must be >= %d, k %u in 1..%d, order %u >= 2)",
            p ? (unsigned long long)p->m : 0ull, VALUE_FILTER_MIN_BITS, p ? p->k : 0,
            BFH_MAX_HASHES, p ? p->order : 0);
    return NULL;
  }
  value_index_t *vi = calloc(1, sizeof *vi);
  if (!vi) goto nomem;
  vi->params = *p;
  vi->nwords = bits_words(p->m);
  pthread_rwlock_init(&vi->lock, NULL);
  pthread_mutex_init(&vi->pend_mu, NULL);
  pthread_mutex_init(&vi->apply_mu, NULL);
  u64_map_init(&vi->members);
  value_index_files_init(&vi->files, p->io);
  hierarchy_leaf_source_t src = value_index_leaf_source(vi);
  vi->hier = hierarchy_create(p->order, p->m, p->placement, &src);
  vi->sliced = sliced_create(p->m);
  vi->blocks = block_index_create();
  if (!vi->hier || !vi->sliced || !vi->blocks) {
    value_index_destroy(vi);
    goto nomem;
  }
  return vi;
nomem:
  err_set(err, BFH_E_NOMEM, "value index: out of memory (m %llu bits)", (unsigned long long)p->m);
  return NULL;
}

void value_index_destroy(value_index_t *vi) {
  if (!vi) return;
  hierarchy_destroy(vi->hier);
  sliced_destroy(vi->sliced);
  for (size_t g = 0; g < vi->ngroups; g++) sliced_destroy(vi->groups[g].sliced);
  free(vi->groups);
  block_index_destroy(vi->blocks);
  for (size_t i = 0; i < vi->n; i++) value_index_leaf_free(vi->leaves[i]);
  free(vi->leaves);
  free(vi->numbers);
  free(vi->leaf_bits);
  for (size_t i = 0; i < vi->npend; i++) value_index_leaf_free(vi->pend[i].leaf);
  free(vi->pend);
  u64_map_release(&vi->members);
  pthread_mutex_destroy(&vi->pend_mu);
  pthread_mutex_destroy(&vi->apply_mu);
  pthread_rwlock_destroy(&vi->lock);
  value_index_files_release(&vi->files);
  persisted_index_destroy(vi->pidx);
  free(vi);
}

static uint64_t persisted_damage(persisted_index_t *x) {
  persisted_index_stats_t st;
  persisted_index_get_stats(x, &st);
  return st.chunks_damaged + st.heads_damaged;
}

uint64_t value_index_persisted_damaged(value_index_t *vi) {
  pthread_rwlock_rdlock(&vi->lock);
  uint64_t d = vi->pidx_damaged + persisted_damage(vi->pidx);
  pthread_rwlock_unlock(&vi->lock);
  return d;
}

void value_index_attach_persisted(value_index_t *vi, struct persisted_index *x) {
  pthread_rwlock_wrlock(&vi->lock);
  vi->pidx_damaged += persisted_damage(vi->pidx);
  persisted_index_destroy(vi->pidx);
  vi->pidx = x;
  pthread_rwlock_unlock(&vi->lock);
}

int value_index_persisted_covers(value_index_t *vi, uint64_t number) {
  pthread_rwlock_rdlock(&vi->lock);
  int c = vi->pidx && persisted_index_covers(vi->pidx, number);
  pthread_rwlock_unlock(&vi->lock);
  return c;
}

int value_index_persisted_unbind(value_index_t *vi, uint64_t number) {
  /* The common case (no file, or a table it does not bind) under the read lock only: tables
     are bound at open, before the file is attached, never later. */
  if (!value_index_persisted_covers(vi, number)) return 0;
  pthread_rwlock_wrlock(&vi->lock);
  int was = vi->pidx && persisted_index_unbind(vi->pidx, number);
  pthread_rwlock_unlock(&vi->lock);
  return was;
}

uint64_t value_index_persisted_bound(value_index_t *vi) {
  pthread_rwlock_rdlock(&vi->lock);
  uint64_t n = vi->pidx ? persisted_index_bound(vi->pidx) : 0;
  pthread_rwlock_unlock(&vi->lock);
  return n;
}

const value_index_params_t *value_index_params(const value_index_t *vi) {
  return &vi->params;
}

/* ---- Adding and removing leaves ----------------------------------------------------- */

void value_index_held_add(value_index_t *vi, int64_t delta) {
  uint64_t now = atomic_fetch_add(&vi->held, (uint64_t)delta) + (uint64_t)delta;
  uint64_t peak = atomic_load(&vi->held_peak);
  while (now > peak && !atomic_compare_exchange_weak(&vi->held_peak, &peak, now)) {
  }
}

/* Leaf l's words no longer count as held (they entered the index, or l is dropped). */
static void unhold(value_index_t *vi, leaf_t *l) {
  value_index_held_add(vi, -(int64_t)l->held);
  l->held = 0;
}

/* unhold and free. */
static void leaf_drop(value_index_t *vi, leaf_t *l) {
  if (!l) return;
  unhold(vi, l);
  value_index_leaf_free(l);
}

static int check_filter(const value_index_t *vi, uint64_t number, const value_filter_t *f,
                        err_t *err) {
  if (!f)
    return err_set(err, BFH_E_INVALID, "value index: table %llu: no filter",
                   (unsigned long long)number);
  if (f->m != vi->params.m || f->k != vi->params.k || f->seed != vi->params.seed)
    return err_set(err, BFH_E_INVALID,
                   "value index: table %llu: filter has m=%llu k=%u seed=%llu, the database "
                   "uses m=%llu k=%u seed=%llu",
                   (unsigned long long)number, (unsigned long long)f->m, f->k,
                   (unsigned long long)f->seed, (unsigned long long)vi->params.m, vi->params.k,
                   (unsigned long long)vi->params.seed);
  return BFH_OK;
}

/* ---- The lean layout ------------------------------------------------------------------ */

/* How far a group's fold may stray from what a leaf asks (doc/search.md "The lean index"):
   a leaf takes a slot of a group holding at least three quarters of the bits it asks
   (lean_suits), and a group grows for new leaves rather than a new one open when it holds at
   most a quarter more than the largest of them asks (lean_grows); tables of an LSM's levels
   differ in values by some 15% either way, and share one group. */
static int lean_suits(uint64_t mf, uint64_t asked) {
  return 4 * mf >= 3 * asked;
}
static int lean_grows(const fold_group_t *g, uint64_t asked) {
  return !g->small && lean_suits(g->mf, asked) && 4 * g->mf <= 5 * asked;
}

/* An index of at most this many tables is one group of 8 slots whose fold spreads the bits
   its tables ask for over the 8 (no less than three quarters of what the largest asks): the
   slots it must allocate beyond its tables are paid from their bits, not added. That group
   never grows: tables beyond open groups of their own. */
#define LEAN_SMALL_TABLES 8
/* The rows a piece of a fold group's scrub clears (apply_lean): about 0.1 ms of writes. */
#define SCRUB_PIECE_BYTES ((size_t)1 << 20)

/* n bits rounded up to a multiple of 64, within [VALUE_FILTER_MIN_BITS, m]. */
static uint64_t lean_round(uint64_t n, uint64_t m) {
  n = (n + 63) / 64 * 64;
  if (n < VALUE_FILTER_MIN_BITS) n = VALUE_FILTER_MIN_BITS;
  return n > m ? m : n;
}

typedef struct fold_plan {
  leaf_t *l;
  uint64_t asked; /* asked_bits */
  long g;         /* the group it goes to; -1 not yet placed */
} fold_plan_t;

/* Whether a leaf of the plan pl[0, n) goes to group g. */
static int planned(const fold_plan_t *pl, size_t n, size_t g) {
  for (size_t i = 0; i < n; i++)
    if (pl[i].g == (long)g) return 1;
  return 0;
}

/* A group folded to mf bits: an emptied one (no leaf, none planned for it in pl[0, n)) is
   reused, else a new one; -1 on no memory. */
static long group_new(value_index_t *vi, uint64_t mf, const fold_plan_t *pl, size_t n) {
  sliced_t *s = sliced_create(mf);
  if (!s) return -1;
  for (size_t g = 0; g < vi->ngroups; g++)
    if (sliced_leaf_count(vi->groups[g].sliced) == 0 && !planned(pl, n, g)) {
      sliced_destroy(vi->groups[g].sliced);
      vi->groups[g] = (fold_group_t){mf, {0}, s, 0.0, 0, 0};
      fold_map_init(&vi->groups[g].map, vi->params.m, mf);
      return (long)g;
    }
  if (vi->ngroups == vi->capgroups) {
    size_t c = vi->capgroups ? 2 * vi->capgroups : 4;
    fold_group_t *a = realloc(vi->groups, c * sizeof *a);
    if (!a) {
      sliced_destroy(s);
      return -1;
    }
    vi->groups = a;
    vi->capgroups = c;
  }
  vi->groups[vi->ngroups] = (fold_group_t){mf, {0}, s, 0.0, 0, 0};
  fold_map_init(&vi->groups[vi->ngroups].map, vi->params.m, mf);
  return (long)vi->ngroups++;
}

/* The bits leaf l's table asks for: lean_bits x the values it holds (estimated from its
   popcount), rounded up to a multiple of 64, within [64, m]. */
static uint64_t asked_bits(const value_index_t *vi, const leaf_t *l) {
  uint64_t m = vi->params.m;
  double fill = (double)l->popcount / (double)m;
  double values = fill >= 1.0 ? (double)m : -(double)m / vi->params.k * log1p(-fill);
  double target = values * vi->params.lean_bits;
  if (target >= (double)m) return m;
  return lean_round((uint64_t)target + 1, m);
}

/* The group with a free slot that suits a leaf asking `asked` bits, the most folded of them;
   -1 if none. room[g] counts group g's free slots. */
static long group_with_room(const value_index_t *vi, uint64_t asked, const size_t *room) {
  long g = -1;
  for (size_t i = 0; i < vi->ngroups; i++) {
    const fold_group_t *c = &vi->groups[i];
    if (room[i] > 0 && lean_suits(c->mf, asked) && (g < 0 || c->mf < vi->groups[g].mf))
      g = (long)i;
  }
  return g;
}

/* Leaf l's words (its filter's, or a streamed leaf's read back from its file: write lock
   held then) folded to group g's m' bits, and their popcount; NULL on no memory. Counted as
   held until fold_release. */
static uint64_t *fold_leaf(value_index_t *vi, leaf_t *l, long g, uint64_t *pop) {
  const fold_group_t *grp = &vi->groups[g];
  size_t nw = bits_words(grp->mf);
  uint64_t *fw = calloc(nw, sizeof *fw);
  if (!fw) return NULL;
  value_index_held_add(vi, (int64_t)(nw * sizeof *fw));
  if (l->filter)
    value_index_fold_words(&grp->map, l->filter->words, 0, vi->nwords, fw);
  else
    value_index_leaf_fold_stream(vi, l, &grp->map, fw);
  *pop = 0;
  for (size_t i = 0; i < nw; i++) *pop += (uint64_t)__builtin_popcountll(fw[i]);
  return fw;
}

static void fold_release(value_index_t *vi, long g, uint64_t *fw) {
  free(fw);
  value_index_held_add(vi, -(int64_t)(bits_words(vi->groups[g].mf) * sizeof *fw));
}

static void enter_folded_locked(value_index_t *vi, leaf_t *l, long g, uint64_t pop);

/* Folds leaf l into the sliced index of fold group g (the only copy kept of its bits) and
   enters it (enter_folded_locked). Write lock held. On failure nothing changed. */
static int fold_into_locked(value_index_t *vi, leaf_t *l, long g) {
  uint64_t pop;
  uint64_t *fw = fold_leaf(vi, l, g, &pop);
  if (!fw) return BFH_E_NOMEM;
  int rc = sliced_add(vi->groups[g].sliced, l->number, fw);
  fold_release(vi, g, fw);
  if (rc != BFH_OK) return rc;
  enter_folded_locked(vi, l, g, pop);
  return BFH_OK;
}

static int by_asked(const void *a, const void *b) {
  const fold_plan_t *x = a, *y = b;
  if (x->asked != y->asked) return x->asked > y->asked ? -1 : 1;
  return x->l->number < y->l->number ? -1 : x->l->number > y->l->number;
}

/* Chooses a fold group for each of the n leaves of a batch and makes the room they need
   (sliced_make_room_exact: rounded up to 8 slots, a 32nd at least; doc/search.md "The lean
   index"). In order of the bits they ask, most first, a leaf takes a free slot of the most
   folded group that suits it (lean_suits). The largest of the leaves left, asking t0, and
   those left asking at least t0 / 2 go to a group that grows for them: one that grows for t0
   (lean_grows), else a new one folded to the mean of what they ask. An index of at most
   LEAN_SMALL_TABLES tables (this batch with the leaves it has) puts all its leaves left in
   one new group of 8 slots folded to the sum of what they ask over 8, but no less than three
   quarters of t0 (6 tables of a 1M-entry LevelDB database take 8 slots of 3/4 of their size,
   not 8 of their size). Write lock held. Leaves whose group could not be made (no memory)
   keep g = -1. defer: a group is not grown here; its `want` says the capacity it needs, and
   the caller grows it (apply_lean). */
static void plan_folds_locked(value_index_t *vi, fold_plan_t *pl, size_t n, int defer) {
  for (size_t i = 0; i < n; i++) {
    pl[i].asked = asked_bits(vi, pl[i].l);
    pl[i].g = -1;
  }
  qsort(pl, n, sizeof *pl, by_asked);
  const int small = vi->n + n <= LEAN_SMALL_TABLES;
  for (;;) {
    size_t *room = calloc(vi->ngroups ? vi->ngroups : 1, sizeof *room);
    if (!room) return;
    for (size_t g = 0; g < vi->ngroups; g++) {
      const fold_group_t *c = &vi->groups[g];
      size_t cap = sliced_capacity(c->sliced);
      room[g] = sliced_free_slots(c->sliced) + (c->want > cap ? c->want - cap : 0);
    }
    for (size_t i = 0; i < n; i++) /* the slots of leaves placed by an earlier round */
      if (pl[i].g >= 0 && room[pl[i].g] > 0) room[pl[i].g]--;
    size_t first = n;
    for (size_t i = 0; i < n; i++) {
      if (pl[i].g >= 0) continue;
      long g = group_with_room(vi, pl[i].asked, room);
      if (g >= 0) {
        pl[i].g = g;
        room[g]--;
      } else if (first == n) {
        first = i;
      }
    }
    free(room);
    if (first == n) return;
    uint64_t t0 = pl[first].asked;
    size_t c = 0;
    double sum = 0;
    for (size_t i = first; i < n; i++)
      if (pl[i].g < 0 && (small || 2 * pl[i].asked >= t0)) {
        c++;
        sum += (double)pl[i].asked;
      }
    long g = -1;
    for (size_t i = 0; !small && i < vi->ngroups; i++)
      if (sliced_leaf_count(vi->groups[i].sliced) > 0 && lean_grows(&vi->groups[i], t0) &&
          (g < 0 || vi->groups[i].mf < vi->groups[g].mf))
        g = (long)i;
    if (g < 0) {
      uint64_t mf = lean_round((uint64_t)(sum / (double)(small ? LEAN_SMALL_TABLES : c)), vi->params.m);
      uint64_t floor = small ? lean_round(t0 - t0 / 4, vi->params.m) : 0;
      g = group_new(vi, mf > floor ? mf : floor, pl, n);
      if (g >= 0) vi->groups[g].small = small;
    }
    /* Room for these and for the leaves of the batch placed in g already (not added yet). */
    size_t placed = 0;
    for (size_t i = 0; g >= 0 && i < n; i++) placed += pl[i].g == g;
    if (g < 0) return;
    if (defer) {
      fold_group_t *grown = &vi->groups[g];
      size_t want = sliced_room_capacity(grown->sliced, c + placed);
      if (want > grown->want) grown->want = want;
    } else if (sliced_make_room_exact(vi->groups[g].sliced, c + placed) != BFH_OK) {
      return;
    }
    for (size_t i = first; i < n; i++)
      if (pl[i].g < 0 && (small || 2 * pl[i].asked >= t0)) pl[i].g = g;
  }
}

/* Folds leaf l into a group as plan_folds_locked would for a batch of one. Write lock held.
   On failure nothing changed. */
static int fold_in_locked(value_index_t *vi, leaf_t *l) {
  fold_plan_t pl = {l, 0, -1};
  plan_folds_locked(vi, &pl, 1, 0);
  if (pl.g < 0) return BFH_E_NOMEM;
  return fold_into_locked(vi, l, pl.g);
}

/* Takes leaf l out of its fold group; an emptied group gives its rows back (and may be
   reused by group_new for another fold). retire: its column stays until the group is
   scrubbed (sliced_retire; apply_lean). */
static void fold_out_locked(value_index_t *vi, leaf_t *l, int retire) {
  fold_group_t *g = &vi->groups[l->group];
  if (retire)
    sliced_retire(g->sliced, l->number);
  else
    sliced_remove(g->sliced, l->number);
  g->fill_sum -= (double)l->folded_popcount / (double)g->mf;
  if (sliced_leaf_count(g->sliced) == 0) {
    sliced_t *fresh = sliced_create(g->mf);
    if (fresh) {
      sliced_destroy(g->sliced);
      g->sliced = fresh;
      g->fill_sum = 0;
    }
  }
}

/* Puts l in the array of leaves, in table-number order, and counts it (the array has room). */
static void enter_leaf(value_index_t *vi, leaf_t *l) {
  size_t i = value_index_leaf_lower_bound(vi, l->number);
  memmove(vi->leaves + i + 1, vi->leaves + i, (vi->n - i) * sizeof *vi->leaves);
  memmove(vi->numbers + i + 1, vi->numbers + i, (vi->n - i) * sizeof *vi->numbers);
  vi->leaves[i] = l;
  vi->numbers[i] = l->number;
  value_index_bits_set(vi, l->number, 1);
  vi->n++;
  vi->popcount_sum += l->popcount;
}

/* Inserts leaf l (filter in memory) into the array, the hierarchy and the sliced index,
   then drops the words if leaves live on disk. Write lock held. On failure nothing
   changed and l is not freed. */
static int leaf_room_locked(value_index_t *vi, err_t *err) {
  if (vi->n < vi->cap) return BFH_OK;
  size_t c = vi->cap ? vi->cap * 2 : 64;
  leaf_t **a = realloc(vi->leaves, c * sizeof *a);
  if (a) vi->leaves = a;
  uint64_t *nums = a ? realloc(vi->numbers, c * sizeof *nums) : NULL;
  if (!nums) return err_set(err, BFH_E_NOMEM, "value index: out of memory");
  vi->numbers = nums;
  vi->cap = c;
  return BFH_OK;
}

/* Lean: leaf l enters the array as folded into group g's column (pop bits); its words are
   dropped. Write lock held. */
static void enter_folded_locked(value_index_t *vi, leaf_t *l, long g, uint64_t pop) {
  l->group = (uint32_t)g;
  l->folded_popcount = pop;
  vi->groups[g].fill_sum += (double)pop / (double)vi->groups[g].mf;
  enter_leaf(vi, l);
  value_filter_destroy(l->filter); /* the slices hold its bits */
  l->filter = NULL;
  free(l->crcs); /* a streamed leaf's, checked by the fold */
  l->crcs = NULL;
  unhold(vi, l);
}

static int add_locked(value_index_t *vi, leaf_t *l, int in_sliced, long group, err_t *err) {
  if (leaf_room_locked(vi, err) != BFH_OK) return BFH_E_NOMEM;
  if (value_index_lean(vi)) {
    int rc = group >= 0 ? fold_into_locked(vi, l, group) : fold_in_locked(vi, l);
    if (rc != BFH_OK)
      return err_set(err, rc, "value index: table %llu: lean index add failed",
                     (unsigned long long)l->number);
    return BFH_OK;
  }
  const uint64_t *words = l->filter->words;
  int rc = in_sliced ? BFH_OK : sliced_add(vi->sliced, l->number, words);
  if (rc != BFH_OK)
    return err_set(err, rc, "value index: table %llu: sliced index add failed",
                   (unsigned long long)l->number);
  vi->adding_words = words;
  vi->adding_number = l->number;
  rc = hierarchy_insert(vi->hier, l->number, vi->params.leaves_on_disk ? NULL : words);
  vi->adding_words = NULL;
  if (rc != BFH_OK) {
    sliced_remove(vi->sliced, l->number);
    return err_set(err, rc, "value index: table %llu: hierarchy insert failed",
                   (unsigned long long)l->number);
  }
  enter_leaf(vi, l);
  if (vi->params.leaves_on_disk) {
    value_filter_destroy(l->filter);
    l->filter = NULL;
  }
  unhold(vi, l); /* its words are the index's now, or gone */
  return BFH_OK;
}

/* ---- The pending queue -------------------------------------------------------------- */

/* Queues an add (l != NULL) or a remove. pend_mu held. BFH_OK or BFH_E_NOMEM. */
static int pend_push(value_index_t *vi, uint64_t number, leaf_t *l) {
  if (vi->npend == vi->cappend) {
    size_t c = vi->cappend ? 2 * vi->cappend : 64;
    pending_op_t *a = realloc(vi->pend, c * sizeof *a);
    if (!a) return BFH_E_NOMEM;
    vi->pend = a;
    vi->cappend = c;
  }
  vi->pend[vi->npend].number = number;
  vi->pend[vi->npend].leaf = l;
  vi->npend++;
  atomic_store(&vi->npend_atomic, vi->npend);
  return BFH_OK;
}

/* The paper's layout: inserts the m new leaves into the array, the sliced index (64 at a
   time by transposes) and the hierarchy. Write lock held. A leaf that cannot go in is freed
   (its table is then simply not indexed: searches scan it). Returns how many went in. */
static size_t insert_leaves_locked(value_index_t *vi, leaf_t **ls, size_t m, int *first_rc,
                                   err_t *err) {
  size_t done = 0;
  int batched = 0;
  if (m > 1) {
    uint64_t *ids = malloc(m * sizeof *ids);
    const uint64_t **ws = malloc(m * sizeof *ws);
    if (ids && ws) {
      for (size_t i = 0; i < m; i++) {
        ids[i] = ls[i]->number;
        ws[i] = ls[i]->filter->words;
      }
      batched = sliced_make_room(vi->sliced, m) == BFH_OK &&
                sliced_add_batch(vi->sliced, ids, ws, m) == BFH_OK;
    }
    free(ids);
    free(ws);
  }
  for (size_t i = 0; i < m; i++) {
    int rc = add_locked(vi, ls[i], batched, -1, err);
    if (rc != BFH_OK) {
      if (*first_rc == BFH_OK) *first_rc = rc;
      leaf_drop(vi, ls[i]);
      continue;
    }
    done++;
  }
  return done;
}

/* Lean: a group gives the rows of its free slots back once they add up to 8 slots and a
   16th of its capacity (in whole 8-slot steps) or more (tables removed; adds grow a group by
   what they need and a 32nd, plan_folds_locked: a shrink never follows a growth at once, so
   the rows are not re-laid back and forth). */
static int shrink_due(const sliced_t *s) {
  size_t cap = sliced_capacity(s);
  return cap >= (sliced_leaf_count(s) + 7) / 8 * 8 + 8 + cap / 16 / 8 * 8;
}

/* Puts copy (NULL: none; made beside the readers, sliced_regrown or sliced_packed) in place
   of group g's rows, under the write lock for the swap alone, and clears the group's want.
   The applier alone (apply_mu) changes groups, so the copy is of the rows as they are. */
static void swap_group_rows(value_index_t *vi, size_t g, sliced_t *copy) {
  sliced_t *old = copy ? vi->groups[g].sliced : NULL;
  pthread_rwlock_wrlock(&vi->lock);
  if (copy) vi->groups[g].sliced = copy;
  vi->groups[g].want = 0;
  pthread_rwlock_unlock(&vi->lock);
  sliced_destroy(old);
}

/* Removes leaf `number` from the array, the hierarchy and the sliced index (lean, with
   retire: its fold group's column is left for a scrub). Write lock held. Returns the leaf
   (caller frees) or NULL if absent. */
static leaf_t *remove_locked(value_index_t *vi, uint64_t number, int retire) {
  size_t i = value_index_leaf_lower_bound(vi, number);
  if (i >= vi->n || vi->leaves[i]->number != number) return NULL;
  leaf_t *l = vi->leaves[i];
  /* Out of the array first: the hierarchy's load() must not see it while the ancestors are
     recomputed. */
  memmove(vi->leaves + i, vi->leaves + i + 1, (vi->n - i - 1) * sizeof *vi->leaves);
  memmove(vi->numbers + i, vi->numbers + i + 1, (vi->n - i - 1) * sizeof *vi->numbers);
  value_index_bits_set(vi, number, 0);
  vi->n--;
  vi->popcount_sum -= l->popcount;
  if (value_index_lean(vi)) {
    fold_out_locked(vi, l, retire);
    return l;
  }
  hierarchy_remove(vi->hier, number);
  sliced_remove_filter(vi->sliced, number, l->filter ? l->filter->words : NULL);
  value_index_files_forget(&vi->files, number);
  return l;
}

/* Takes the queue: *n operations in call order (caller frees). */
static pending_op_t *take_queue(value_index_t *vi, size_t *n) {
  pthread_mutex_lock(&vi->pend_mu);
  pending_op_t *ops = vi->pend;
  *n = vi->npend;
  vi->pend = NULL;
  vi->npend = vi->cappend = 0;
  atomic_store(&vi->npend_atomic, 0);
  pthread_mutex_unlock(&vi->pend_mu);
  return ops;
}

/* Moves the adds of ops to its front, in order; returns how many. */
static size_t adds_to_front(pending_op_t *ops, size_t n) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (ops[i].leaf) ops[m++] = ops[i];
  return m;
}

/* The paper's layout: the removes, then the adds as one batch, under one write lock (the
   hierarchy's batch rebuilds the paper's tree once for all of them). settle 0 leaves that
   rebuild to a later call (value_index_apply_step). */
static int apply_paper(value_index_t *vi, pending_op_t *ops, size_t n, int settle, err_t *err) {
  int rc = BFH_OK;
  pthread_rwlock_wrlock(&vi->lock);
  hierarchy_batch_begin(vi->hier);
  for (size_t i = 0; i < n; i++)
    if (!ops[i].leaf) value_index_leaf_free(remove_locked(vi, ops[i].number, 0));
  size_t m = adds_to_front(ops, n);
  vi->add_batches += m > 0;
  leaf_t **ls = malloc((m ? m : 1) * sizeof *ls);
  if (ls) {
    for (size_t i = 0; i < m; i++) ls[i] = ops[i].leaf;
    insert_leaves_locked(vi, ls, m, &rc, err);
    free(ls);
  } else {
    for (size_t i = 0; i < m; i++) insert_leaves_locked(vi, &ops[i].leaf, 1, &rc, err);
  }
  /* A failed rebuild leaves a correct tree in B+-tree shape; the next batch retries. */
  if (settle) {
    (void)hierarchy_batch_end(vi->hier);
    atomic_store(&vi->unsettled, 0);
  } else {
    atomic_store(&vi->unsettled, 1); /* the batch stays open until a settling call */
  }
  pthread_rwlock_unlock(&vi->lock);
  return rc;
}

/* One piece of a fold group's scrub (apply_lean): rows from `row` on, under the write lock.
   Returns the row to go on from. */
static uint64_t scrub_piece(value_index_t *vi, sliced_t *s, uint64_t row) {
  pthread_rwlock_wrlock(&vi->lock);
  row = sliced_scrub(s, row, SCRUB_PIECE_BYTES);
  pthread_rwlock_unlock(&vi->lock);
  return row;
}

/* The words of a folded leaf an add writes in one piece (apply_lean): a row byte per set bit,
   about 0.1 ms. */
#define ADD_PIECE_WORDS 256

/* Lean: adds leaf l to group g in pieces (apply_lean): folded beside the readers, its column
   filled ADD_PIECE_WORDS words at a time under the write lock, then entered
   (sliced_add_begin, _words, _end: the slot is not reported until then). A streamed leaf
   (folded under the lock), or one without memory for the folded words, goes in one piece
   (add_locked). On failure nothing changed. */
static int add_in_pieces(value_index_t *vi, leaf_t *l, long g, err_t *err) {
  uint64_t pop;
  uint64_t *fw = l->filter ? fold_leaf(vi, l, g, &pop) : NULL; /* the applier alone changes groups */
  int rc;
  if (!fw) {
    pthread_rwlock_wrlock(&vi->lock);
    rc = add_locked(vi, l, 0, g, err);
    pthread_rwlock_unlock(&vi->lock);
    return rc;
  }
  size_t nw = bits_words(vi->groups[g].mf);
  sliced_t *s = vi->groups[g].sliced;
  size_t slot;
  pthread_rwlock_wrlock(&vi->lock);
  rc = leaf_room_locked(vi, err);
  if (rc == BFH_OK && sliced_add_begin(s, l->number, &slot) != BFH_OK)
    rc = err_set(err, BFH_E_NOMEM, "value index: table %llu: lean index add failed",
                 (unsigned long long)l->number);
  pthread_rwlock_unlock(&vi->lock);
  for (size_t w = 0; rc == BFH_OK && w < nw; w += ADD_PIECE_WORDS) {
    pthread_rwlock_wrlock(&vi->lock);
    sliced_add_words(s, fw, w, w + ADD_PIECE_WORDS);
    pthread_rwlock_unlock(&vi->lock);
  }
  if (rc == BFH_OK) {
    pthread_rwlock_wrlock(&vi->lock);
    sliced_add_end(s);
    enter_folded_locked(vi, l, g, pop);
    pthread_rwlock_unlock(&vi->lock);
  }
  fold_release(vi, g, fw);
  return rc;
}

/* The lean layout: the same batch, piece by piece, each piece under a write lock of its own,
   so that a query waits for one piece at most, not for the batch:
   - the removes, together: each retires its leaf's column (O(1), sliced_retire);
   - each fold group's scrub of the retired columns, one pass over its rows for all of them,
     SCRUB_PIECE_BYTES of rows a piece (clearing a column alone writes a byte in every row);
   - the plan of the adds' fold groups; the growth it makes room for, and each group's
     shrink at the end, re-lay the rows into a copy beside the readers (sliced_regrown,
     sliced_packed), and the write lock is taken for the swap alone;
   - each add: its leaf folded beside the readers, its column filled ADD_PIECE_WORDS words
     a piece (add_in_pieces).
   Each piece leaves a whole index: a table whose add is not in yet has no leaf, and a query
   reads it by its map (value_index_select), as one of a table whose remove is not in yet. */
static int apply_lean(value_index_t *vi, pending_op_t *ops, size_t n, err_t *err) {
  int rc = BFH_OK;
  leaf_t **gone = malloc((n ? n : 1) * sizeof *gone);
  size_t ngone = 0;
  pthread_rwlock_wrlock(&vi->lock);
  for (size_t i = 0; i < n; i++) {
    if (ops[i].leaf) continue;
    leaf_t *l = remove_locked(vi, ops[i].number, gone != NULL);
    if (gone)
      gone[ngone++] = l;
    else
      value_index_leaf_free(l);
  }
  pthread_rwlock_unlock(&vi->lock);
  for (size_t i = 0; i < ngone; i++) value_index_leaf_free(gone[i]);
  free(gone);
  for (size_t g = 0; g < vi->ngroups; g++) { /* the applier alone changes groups and slots */
    sliced_t *s = vi->groups[g].sliced;
    if (!sliced_retired(s)) continue;
    uint64_t row = 0;
    do row = scrub_piece(vi, s, row); while (row < vi->groups[g].mf);
    pthread_rwlock_wrlock(&vi->lock);
    sliced_scrub_done(s);
    pthread_rwlock_unlock(&vi->lock);
  }
  size_t m = adds_to_front(ops, n);
  fold_plan_t *pl = m ? malloc(m * sizeof *pl) : NULL;
  pthread_rwlock_wrlock(&vi->lock);
  vi->add_batches += m > 0;
  if (pl) {
    for (size_t i = 0; i < m; i++) pl[i].l = ops[i].leaf;
    plan_folds_locked(vi, pl, m, 1); /* sorts pl by fold */
  }
  pthread_rwlock_unlock(&vi->lock);
  for (size_t g = 0; g < vi->ngroups; g++) { /* the growth the plan made room for */
    fold_group_t *grown = &vi->groups[g];
    if (!grown->want) continue;
    sliced_t *s = grown->sliced;
    sliced_t *copy = grown->want > sliced_capacity(s) ? sliced_regrown(s, grown->want) : NULL;
    swap_group_rows(vi, g, copy); /* without memory, an add grows the rows in place */
  }
  for (size_t i = 0; i < m; i++) {
    leaf_t *l = pl ? pl[i].l : ops[i].leaf;
    long g = pl ? pl[i].g : -1;
    int r;
    if (g >= 0) {
      r = add_in_pieces(vi, l, g, err);
    } else { /* no plan: planned alone, in one piece */
      pthread_rwlock_wrlock(&vi->lock);
      r = add_locked(vi, l, 0, -1, err);
      pthread_rwlock_unlock(&vi->lock);
    }
    if (r != BFH_OK) {
      if (rc == BFH_OK) rc = r;
      leaf_drop(vi, l); /* its table is not indexed: searches read it by its map */
    }
  }
  free(pl);
  for (size_t g = 0; g < vi->ngroups; g++) /* ngroups changes only under apply_mu */
    if (shrink_due(vi->groups[g].sliced)) swap_group_rows(vi, g, sliced_packed(vi->groups[g].sliced));
  return rc;
}

/* Applies the queued adds and removes: removes first, then the adds (numbers are never
   reused, and an add whose table was removed before being applied was dropped from the
   queue, so the order between different tables does not matter). */
static int apply_pending(value_index_t *vi, int settle, err_t *err) {
  if (atomic_load(&vi->npend_atomic) == 0 && (!settle || !atomic_load(&vi->unsettled)))
    return BFH_OK;
  pthread_mutex_lock(&vi->apply_mu);
  size_t n;
  pending_op_t *ops = take_queue(vi, &n);
  int rc = value_index_lean(vi) ? apply_lean(vi, ops, n, err) : apply_paper(vi, ops, n, settle, err);
  pthread_mutex_unlock(&vi->apply_mu);
  free(ops);
  return rc;
}

/* A new leaf of filter (taken, also on failure), checked against the index; streamed: the
   lean layout drops its words (value_index_leaf_make), else it holds them (counted in held
   until they enter the index). NULL on failure (message in err). */
static leaf_t *leaf_make(value_index_t *vi, uint64_t number, value_filter_t *filter,
                         const char *path, uint64_t offset, int streamed, err_t *err) {
  int rc = check_filter(vi, number, filter, err);
  if (rc == BFH_OK && vi->params.leaves_on_disk && !path)
    rc = err_set(err, BFH_E_INVALID, "value index: table %llu: leaves on disk need a path",
                 (unsigned long long)number);
  if (rc != BFH_OK) {
    value_filter_destroy(filter);
    return NULL;
  }
  uint64_t bytes = vi->nwords * 8;
  value_index_held_add(vi, (int64_t)bytes); /* the words handed over */
  streamed = streamed && value_index_lean(vi) && path;
  leaf_t *l =
      value_index_leaf_new(number, filter, path, offset, vi->params.leaves_on_disk || streamed);
  if (!l) {
    value_index_held_add(vi, -(int64_t)bytes);
    value_filter_destroy(filter);
    err_set(err, BFH_E_NOMEM, "value index: out of memory");
    return NULL;
  }
  l->held = bytes;
  if (streamed) { /* popcount and chunk CRCs taken: the words are read back at the fold */
    value_filter_destroy(l->filter);
    l->filter = NULL;
    l->streamed = 1;
    unhold(vi, l);
  }
  return l;
}

value_index_leaf_t *value_index_leaf_make(value_index_t *vi, uint64_t number,
                                          value_filter_t *filter, const char *path, uint64_t offset,
                                          err_t *err) {
  return leaf_make(vi, number, filter, path, offset, 1, err);
}

/* Queues the add of leaf l (taken, also on failure). */
static int queue_leaf(value_index_t *vi, leaf_t *l, err_t *err) {
  uint64_t number = l->number;
  int rc = BFH_OK;
  pthread_mutex_lock(&vi->pend_mu);
  if (u64_map_get(&vi->members, number, NULL)) {
    rc = err_set(err, BFH_E_INVALID, "value index: table %llu is already indexed",
                 (unsigned long long)number);
  } else if (u64_map_reserve(&vi->members, u64_map_count(&vi->members) + 1) != BFH_OK ||
             pend_push(vi, number, l) != BFH_OK) {
    rc = err_set(err, BFH_E_NOMEM, "value index: out of memory");
  } else {
    u64_map_put(&vi->members, number, 1); /* cannot fail after the reserve */
  }
  pthread_mutex_unlock(&vi->pend_mu);
  if (rc != BFH_OK) leaf_drop(vi, l);
  return rc;
}

/* Validates and queues one add; takes ownership of filter. */
static int queue_add(value_index_t *vi, uint64_t number, value_filter_t *filter, const char *path,
                     uint64_t offset, err_t *err) {
  err_t e;
  err_clear(&e);
  leaf_t *l = leaf_make(vi, number, filter, path, offset, 0, &e);
  if (!l) {
    if (err) *err = e;
    return e.code;
  }
  return queue_leaf(vi, l, err);
}

int value_index_add(value_index_t *vi, uint64_t number, value_filter_t *filter, const char *path,
                    uint64_t offset, err_t *err) {
  return queue_add(vi, number, filter, path, offset, err);
}

void value_index_leaf_discard(value_index_t *vi, value_index_leaf_t *l) {
  leaf_drop(vi, l);
}

int value_index_add_leaf(value_index_t *vi, value_index_leaf_t *l, err_t *err) {
  if (!l) return err_set(err, BFH_E_INVALID, "value index: no leaf");
  return queue_leaf(vi, l, err);
}

int value_index_add_batch(value_index_t *vi, size_t n, const uint64_t *numbers,
                          value_filter_t **filters, const char *const *paths,
                          const uint64_t *offsets, size_t *added, err_t *err) {
  int first = BFH_OK;
  size_t queued = 0;
  for (size_t i = 0; i < n; i++) {
    err_t e;
    int rc = queue_add(vi, numbers[i], filters[i], paths ? paths[i] : NULL,
                       offsets ? offsets[i] : 0, &e);
    if (rc == BFH_OK) {
      queued++;
    } else if (first == BFH_OK) {
      first = rc;
      if (err) *err = e;
    }
  }
  err_t e;
  int rc = apply_pending(vi, 1, &e);
  if (rc != BFH_OK && first == BFH_OK) {
    first = rc;
    if (err) *err = e;
  }
  if (added) *added = queued;
  return first;
}

int value_index_remove(value_index_t *vi, uint64_t number) {
  leaf_t *drop = NULL;
  int rc = BFH_OK;
  pthread_mutex_lock(&vi->pend_mu);
  if (!u64_map_get(&vi->members, number, NULL)) {
    rc = BFH_NOT_FOUND;
  } else {
    /* A table removed before its add was applied costs the index nothing. */
    for (size_t i = vi->npend; i-- > 0;) {
      if (vi->pend[i].number == number && vi->pend[i].leaf) {
        drop = vi->pend[i].leaf;
        memmove(vi->pend + i, vi->pend + i + 1, (vi->npend - i - 1) * sizeof *vi->pend);
        vi->npend--;
        atomic_store(&vi->npend_atomic, vi->npend);
        break;
      }
    }
    if (!drop && pend_push(vi, number, NULL) != BFH_OK) {
      /* No memory to queue it: remove it now (the caller is not a search), between two
         applies (not under the room an apply planned). */
      pthread_mutex_unlock(&vi->pend_mu);
      pthread_mutex_lock(&vi->apply_mu);
      pthread_rwlock_wrlock(&vi->lock);
      drop = remove_locked(vi, number, 0);
      pthread_rwlock_unlock(&vi->lock);
      pthread_mutex_unlock(&vi->apply_mu);
      pthread_mutex_lock(&vi->pend_mu);
    }
    u64_map_del(&vi->members, number, NULL);
  }
  pthread_mutex_unlock(&vi->pend_mu);
  leaf_drop(vi, drop);
  if (rc == BFH_OK) block_index_remove(vi->blocks, number);
  return rc;
}

block_index_t *value_index_blocks(value_index_t *vi) {
  return vi->blocks;
}

int value_index_contains(value_index_t *vi, uint64_t number) {
  pthread_mutex_lock(&vi->pend_mu);
  int c = u64_map_get(&vi->members, number, NULL);
  pthread_mutex_unlock(&vi->pend_mu);
  return c;
}

size_t value_index_leaf_count(value_index_t *vi) {
  pthread_mutex_lock(&vi->pend_mu);
  size_t n = u64_map_count(&vi->members);
  pthread_mutex_unlock(&vi->pend_mu);
  return n;
}

int value_index_apply(value_index_t *vi, err_t *err) {
  return apply_pending(vi, 1, err);
}

int value_index_apply_step(value_index_t *vi, int settle, err_t *err) {
  return apply_pending(vi, settle, err);
}

void value_index_set_applier(value_index_t *vi, int on) {
  atomic_store(&vi->applier, on != 0);
}

size_t value_index_pending(value_index_t *vi) {
  return atomic_load(&vi->npend_atomic);
}

uint64_t value_index_pending_bytes(value_index_t *vi) {
  uint64_t b = 0;
  pthread_mutex_lock(&vi->pend_mu);
  for (size_t i = 0; i < vi->npend; i++)
    if (vi->pend[i].leaf) b += value_index_leaf_mem_bytes(vi, vi->pend[i].leaf);
  pthread_mutex_unlock(&vi->pend_mu);
  return b;
}

int value_index_reserve(value_index_t *vi, size_t extra, err_t *err) {
  if (value_index_lean(vi)) return BFH_OK;
  pthread_rwlock_wrlock(&vi->lock);
  int rc = sliced_reserve(vi->sliced, sliced_leaf_count(vi->sliced) + extra);
  pthread_rwlock_unlock(&vi->lock);
  return rc == BFH_OK ? BFH_OK : err_set(err, BFH_E_NOMEM, "value index: out of memory");
}

uint64_t value_index_rebuild_count(value_index_t *vi) {
  pthread_rwlock_rdlock(&vi->lock);
  uint64_t n = hierarchy_rebuild_count(vi->hier);
  pthread_rwlock_unlock(&vi->lock);
  return n;
}

uint64_t value_index_add_batch_count(value_index_t *vi) {
  pthread_rwlock_rdlock(&vi->lock);
  uint64_t n = vi->add_batches;
  pthread_rwlock_unlock(&vi->lock);
  return n;
}

uint64_t value_index_relay_count(value_index_t *vi) {
  pthread_rwlock_rdlock(&vi->lock);
  uint64_t n = vi->sliced ? sliced_relay_count(vi->sliced) : 0;
  pthread_rwlock_unlock(&vi->lock);
  return n;
}

/* ---- Validation ---------------------------------------------------------------------- */

int value_index_validate(value_index_t *vi, err_t *err) {
  apply_pending(vi, 1, NULL);
  pthread_rwlock_rdlock(&vi->lock);
  if (value_index_lean(vi)) {
    size_t in_groups = 0;
    int rc = BFH_OK;
    for (size_t g = 0; g < vi->ngroups; g++) in_groups += sliced_leaf_count(vi->groups[g].sliced);
    if (in_groups != vi->n || hierarchy_leaf_count(vi->hier) != 0)
      rc = err_set(err, BFH_E_CORRUPT, "value index: %zu leaves, %zu in the lean slices", vi->n,
                   in_groups);
    for (size_t i = 0; rc == BFH_OK && i < vi->n; i++) {
      const leaf_t *l = vi->leaves[i];
      if (l->group >= vi->ngroups || !sliced_contains(vi->groups[l->group].sliced, l->number))
        rc = err_set(err, BFH_E_CORRUPT, "value index: table %llu missing from its lean slice",
                     (unsigned long long)l->number);
      else if (i && vi->leaves[i - 1]->number >= l->number)
        rc = err_set(err, BFH_E_CORRUPT, "value index: leaf array out of order at %zu", i);
    }
    pthread_rwlock_unlock(&vi->lock);
    return rc;
  }
  int rc = hierarchy_validate(vi->hier, err);
  if (rc == BFH_OK &&
      (hierarchy_leaf_count(vi->hier) != vi->n || sliced_leaf_count(vi->sliced) != vi->n))
    rc = err_set(err, BFH_E_CORRUPT, "value index: %zu leaves, hierarchy %zu, sliced %zu", vi->n,
                 hierarchy_leaf_count(vi->hier), sliced_leaf_count(vi->sliced));
  for (size_t i = 0; rc == BFH_OK && i < vi->n; i++) {
    uint64_t id = vi->leaves[i]->number;
    if (!hierarchy_contains(vi->hier, id) || !sliced_contains(vi->sliced, id))
      rc = err_set(err, BFH_E_CORRUPT, "value index: table %llu missing from %s",
                   (unsigned long long)id,
                   hierarchy_contains(vi->hier, id) ? "the sliced index" : "the hierarchy");
    if (i && vi->leaves[i - 1]->number >= id)
      rc = err_set(err, BFH_E_CORRUPT, "value index: leaf array out of order at %zu", i);
  }
  pthread_rwlock_unlock(&vi->lock);
  return rc;
}
