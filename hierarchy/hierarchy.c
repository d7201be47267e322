/* The Bloom filter hierarchy, see hierarchy.h.
 *
 * Shape in memory: an internal node owns its OR filter (ceil(m/64) words) and an array of
 * 2d+1 child pointers (one spare so a node can overflow by one before it splits). Children
 * of a level-0 node are leaf_t records (id, borrowed words or NULL, parent); children of a
 * level-L node (L > 0) are level-(L-1) nodes. An id -> leaf_t* map finds a leaf for
 * removal.
 *
 * Non-resident leaves (words == NULL) are read through the source only when an OR must be
 * recomputed from them: before an operation changes anything it loads every leaf it will
 * need into a pool of scratch buffers (leaf_t.tmp points there for the duration), so a
 * failing load leaves the hierarchy unchanged. Merging two nodes ORs their exact filters,
 * so only a split, a borrow, or the node that lost a leaf read leaf words.
 */
#include "hierarchy/hierarchy.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "filters/bits.h"
#include "util/u64_map.h"

#define MAX_DEPTH 64 /* non-root nodes have >= 2 children, so height <= log2(2^64) */

typedef struct node node_t;

typedef struct leaf {
  uint64_t id;
  const uint64_t *words; /* borrowed; NULL = not resident */
  const uint64_t *tmp;   /* during one operation: the loaded copy of a non-resident leaf */
  node_t *parent;
} leaf_t;

struct node {
  node_t *parent;
  uint64_t *words;  /* owned: OR of the children */
  uint64_t nleaves; /* leaves in this subtree */
  uint32_t level;   /* 0: children are leaves */
  uint32_t n;       /* children */
  void *kid[];      /* 2d+1: node_t* (level > 0) or leaf_t* (level 0) */
};

struct hierarchy {
  uint32_t d;
  uint64_t m;
  size_t nwords;
  hierarchy_placement_t placement;
  hierarchy_leaf_source_t source;
  int has_source;
  node_t *root;
  size_t nleaves;
  uint64_t nnodes;
  u64_map_t map; /* id -> (uintptr_t)leaf_t* */
  /* Scratch, kept between operations (allocated on first need). */
  uint64_t *newleaf; /* the words of a non-resident leaf being inserted */
  uint64_t **pool;   /* loaded leaf buffers */
  size_t pool_cap;   /* buffers allocated */
  size_t pool_used;  /* buffers in use by the current operation */
  leaf_t **loaded;   /* leaves whose tmp points into the pool; pool_cap entries */
  node_t **spare;    /* nodes allocated ahead of a split */
  size_t nspare;
  /* HIERARCHY_PAPER: rebuilds are put off until hierarchy_batch_end (batch), or the tree is
     correct but not in the paper's shape because the last rebuild failed (stale). */
  int batch, stale;
  uint64_t rebuilds; /* paper-shape rebuilds done (hierarchy_rebuild_count) */
};

/* ---- nodes ---- */

static size_t node_bytes(const hierarchy_t *h) {
  return sizeof(node_t) + (2 * (size_t)h->d + 1) * sizeof(void *) + (h->nwords + 7) / 8 * 64;
}

static node_t *node_alloc(hierarchy_t *h, uint32_t level) {
  node_t *x = malloc(sizeof(node_t) + (2 * (size_t)h->d + 1) * sizeof(void *));
  if (!x) return NULL;
  x->words = aligned_alloc(64, (h->nwords + 7) / 8 * 64);
  if (!x->words) {
    free(x);
    return NULL;
  }
  x->parent = NULL;
  x->nleaves = 0;
  x->level = level;
  x->n = 0;
  h->nnodes++;
  return x;
}

static void node_free(hierarchy_t *h, node_t *x) {
  if (!x) return;
  free(x->words);
  free(x);
  h->nnodes--;
}

static void tree_free(hierarchy_t *h, node_t *x) {
  if (!x) return;
  for (uint32_t i = 0; i < x->n; i++) {
    if (x->level == 0)
      free(x->kid[i]);
    else
      tree_free(h, x->kid[i]);
  }
  node_free(h, x);
}

static const uint64_t *leaf_words(const leaf_t *l) {
  return l->words ? l->words : l->tmp;
}

/* Words of child i; for a leaf, resident or preloaded (NULL otherwise: a bug). */
static const uint64_t *kid_words(const node_t *x, uint32_t i) {
  if (x->level == 0) return leaf_words(x->kid[i]);
  return ((const node_t *)x->kid[i])->words;
}

static void set_parent(node_t *x, uint32_t i) {
  if (x->level == 0)
    ((leaf_t *)x->kid[i])->parent = x;
  else
    ((node_t *)x->kid[i])->parent = x;
}

static uint64_t kid_leaves(const node_t *x, uint32_t i) {
  return x->level == 0 ? 1 : ((const node_t *)x->kid[i])->nleaves;
}

/* Recomputes the filter and leaf count of x from its children (all readable). */
static void recompute(hierarchy_t *h, node_t *x) {
  memset(x->words, 0, h->nwords * sizeof(uint64_t));
  x->nleaves = 0;
  for (uint32_t i = 0; i < x->n; i++) {
    const uint64_t *w = kid_words(x, i);
    if (w) bits_or(x->words, w, h->nwords);
    x->nleaves += kid_leaves(x, i);
  }
}

static uint32_t kid_index(const node_t *parent, const void *kid) {
  for (uint32_t i = 0; i < parent->n; i++)
    if (parent->kid[i] == kid) return i;
  return parent->n; /* not reached in a consistent tree */
}

static void kid_insert_at(node_t *x, uint32_t pos, void *kid) {
  memmove(&x->kid[pos + 1], &x->kid[pos], (x->n - pos) * sizeof(void *));
  x->kid[pos] = kid;
  x->n++;
  set_parent(x, pos);
}

static void kid_remove_at(node_t *x, uint32_t pos) {
  memmove(&x->kid[pos], &x->kid[pos + 1], (x->n - pos - 1) * sizeof(void *));
  x->n--;
}

/* ---- loading non-resident leaves ---- */

static int pool_reserve(hierarchy_t *h, size_t need) {
  if (need <= h->pool_cap) return ST_OK;
  uint64_t **pool = realloc(h->pool, need * sizeof *pool);
  if (!pool) return ST_E_NOMEM;
  h->pool = pool;
  leaf_t **loaded = realloc(h->loaded, need * sizeof *loaded);
  if (!loaded) return ST_E_NOMEM;
  h->loaded = loaded;
  while (h->pool_cap < need) {
    uint64_t *b = malloc(h->nwords * sizeof(uint64_t));
    if (!b) return ST_E_NOMEM;
    h->pool[h->pool_cap++] = b;
  }
  return ST_OK;
}

/* Makes leaf l readable for the current operation. */
static int preload(hierarchy_t *h, leaf_t *l) {
  if (leaf_words(l)) return ST_OK;
  int rc = pool_reserve(h, h->pool_used + 1);
  if (rc != ST_OK) return rc;
  uint64_t *b = h->pool[h->pool_used];
  rc = h->source.load(h->source.ctx, l->id, b);
  if (rc != ST_OK) return rc;
  l->tmp = b;
  h->loaded[h->pool_used++] = l;
  return ST_OK;
}

static int preload_kids(hierarchy_t *h, node_t *x) {
  if (x->level != 0) return ST_OK;
  for (uint32_t i = 0; i < x->n; i++) {
    int rc = preload(h, x->kid[i]);
    if (rc != ST_OK) return rc;
  }
  return ST_OK;
}

static void release_loads(hierarchy_t *h) {
  for (size_t i = 0; i < h->pool_used; i++) h->loaded[i]->tmp = NULL;
  h->pool_used = 0;
}

static void spares_free(hierarchy_t *h) {
  while (h->nspare > 0) node_free(h, h->spare[--h->nspare]);
}

static node_t *spare_take(hierarchy_t *h, uint32_t level) {
  node_t *x = h->spare[--h->nspare];
  x->level = level;
  x->n = 0;
  x->nleaves = 0;
  x->parent = NULL;
  return x;
}

/* ---- create / destroy ---- */

hierarchy_t *hierarchy_create(uint32_t order, uint64_t m, hierarchy_placement_t placement,
                              const hierarchy_leaf_source_t *source) {
  if (order < 2 || order > 4096 || m == 0 || m > ((uint64_t)1 << 40)) return NULL;
  if (placement != HIERARCHY_SIMILARITY && placement != HIERARCHY_POSITIONAL &&
      placement != HIERARCHY_PAPER)
    return NULL;
  if (source && (!source->probe || !source->load)) return NULL;
  hierarchy_t *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->d = order;
  h->m = m;
  h->nwords = bits_words(m);
  h->placement = placement;
  if (source) {
    h->source = *source;
    h->has_source = 1;
  }
  u64_map_init(&h->map);
  h->spare = malloc(MAX_DEPTH * sizeof *h->spare);
  if (!h->spare) {
    free(h);
    return NULL;
  }
  return h;
}

void hierarchy_destroy(hierarchy_t *h) {
  if (!h) return;
  tree_free(h, h->root);
  spares_free(h);
  free(h->spare);
  for (size_t i = 0; i < h->pool_cap; i++) free(h->pool[i]);
  free(h->pool);
  free(h->loaded);
  free(h->newleaf);
  u64_map_release(&h->map);
  free(h);
}

/* After a change that kept the tree correct: a HIERARCHY_PAPER tree is rebuilt in the
   paper's shape now, or at the end of the batch. A failed rebuild leaves it stale (correct,
   B+-tree shaped) until the next change or batch end. */
static int rebuild_paper(hierarchy_t *h);
static void changed(hierarchy_t *h) {
  if (h->placement != HIERARCHY_PAPER) return;
  h->stale = 1;
  if (!h->batch) rebuild_paper(h);
}

/* ---- insert ---- */

/* The child of x (level > 0) the new leaf lw descends into. */
static uint32_t choose_child(const hierarchy_t *h, const node_t *x, const uint64_t *lw) {
  if (h->placement != HIERARCHY_SIMILARITY) return x->n - 1; /* positional, paper: append */
  uint32_t best = 0;
  uint64_t best_dist = UINT64_MAX, best_leaves = UINT64_MAX;
  for (uint32_t i = 0; i < x->n; i++) {
    const node_t *c = x->kid[i];
    uint64_t dist = bits_hamming(c->words, lw, h->nwords);
    if (dist < best_dist || (dist == best_dist && c->nleaves < best_leaves)) {
      best = i;
      best_dist = dist;
      best_leaves = c->nleaves;
    }
  }
  return best;
}

typedef struct split_key {
  int64_t key;
  uint32_t idx;
} split_key_t;

static int by_key(const void *a, const void *b) {
  const split_key_t *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Index of the child farthest from w (leftmost on ties); dist[i] receives each distance. */
static uint32_t farthest(const hierarchy_t *h, const node_t *x, const uint64_t *w, uint64_t *dist) {
  uint32_t best = 0;
  for (uint32_t i = 0; i < x->n; i++) {
    dist[i] = bits_hamming(kid_words(x, i), w, h->nwords);
    if (dist[i] > dist[best]) best = i;
  }
  return best;
}

/* Splits x (2d+1 children, all readable) into x and a new right sibling taken from the
   spares; returns the sibling. Positional: the order is kept, x keeps the first d+1.
   Similarity: seeds a and b are two far-apart children (a farthest from child 0, b
   farthest from a); the children are ordered by dist(a) - dist(b) (ties by position)
   and x keeps the d+1 closest to a. */
static node_t *split(hierarchy_t *h, node_t *x) {
  uint32_t n = x->n, keep = h->d + 1;
  void *order[2 * h->d + 1];
  if (h->placement == HIERARCHY_SIMILARITY) {
    uint64_t da[2 * h->d + 1], db[2 * h->d + 1];
    split_key_t keys[2 * h->d + 1];
    uint32_t a = farthest(h, x, kid_words(x, 0), da);
    uint32_t b = farthest(h, x, kid_words(x, a), da);
    farthest(h, x, kid_words(x, b), db);
    for (uint32_t i = 0; i < n; i++) {
      keys[i].key = (int64_t)da[i] - (int64_t)db[i];
      keys[i].idx = i;
    }
    qsort(keys, n, sizeof keys[0], by_key);
    for (uint32_t i = 0; i < n; i++) order[i] = x->kid[keys[i].idx];
  } else {
    memcpy(order, x->kid, n * sizeof(void *));
  }
  node_t *r = spare_take(h, x->level);
  memcpy(x->kid, order, keep * sizeof(void *));
  x->n = keep;
  memcpy(r->kid, order + keep, (n - keep) * sizeof(void *));
  r->n = n - keep;
  for (uint32_t i = 0; i < x->n; i++) set_parent(x, i);
  for (uint32_t i = 0; i < r->n; i++) set_parent(r, i);
  recompute(h, x);
  recompute(h, r);
  return r;
}

int hierarchy_insert(hierarchy_t *h, uint64_t id, const uint64_t *words) {
  if (u64_map_get(&h->map, id, NULL)) return ST_E_INVALID;
  const uint64_t *lw = words;
  if (!lw) {
    if (!h->has_source) return ST_E_INVALID;
    if (!h->newleaf && !(h->newleaf = malloc(h->nwords * sizeof(uint64_t)))) return ST_E_NOMEM;
    int rc = h->source.load(h->source.ctx, id, h->newleaf);
    if (rc != ST_OK) return rc;
    lw = h->newleaf;
  }
  if (u64_map_reserve(&h->map, u64_map_count(&h->map) + 1) != ST_OK) return ST_E_NOMEM;
  leaf_t *l = malloc(sizeof *l);
  if (!l) return ST_E_NOMEM;
  l->id = id;
  l->words = words;
  l->tmp = words ? NULL : lw;
  l->parent = NULL;

  if (!h->root) {
    node_t *r = node_alloc(h, 0);
    if (!r) {
      free(l);
      return ST_E_NOMEM;
    }
    memcpy(r->words, lw, h->nwords * sizeof(uint64_t));
    r->kid[0] = l;
    r->n = 1;
    r->nleaves = 1;
    l->parent = r;
    l->tmp = NULL;
    h->root = r;
    u64_map_put(&h->map, id, (uint64_t)(uintptr_t)l);
    h->nleaves = 1;
    return ST_OK;
  }

  /* Plan: the target level-0 node, and how many nodes the splits will need. */
  node_t *target = h->root;
  while (target->level > 0) target = target->kid[choose_child(h, target, lw)];
  size_t need = 0;
  node_t *x = target;
  while (x && x->n == 2 * h->d) {
    need++;
    x = x->parent;
  }
  if (need > 0 && !x) need++; /* the root splits: a new root */
  int rc = ST_OK;
  while (h->nspare < need && rc == ST_OK) {
    node_t *s = node_alloc(h, 0);
    if (s)
      h->spare[h->nspare++] = s;
    else
      rc = ST_E_NOMEM;
  }
  if (rc == ST_OK && target->n == 2 * h->d) rc = preload_kids(h, target);
  if (rc != ST_OK) {
    release_loads(h);
    spares_free(h);
    free(l);
    return rc;
  }

  /* Commit: nothing below can fail. */
  u64_map_put(&h->map, id, (uint64_t)(uintptr_t)l);
  for (x = target; x; x = x->parent) {
    bits_or(x->words, lw, h->nwords);
    x->nleaves++;
  }
  target->kid[target->n++] = l;
  l->parent = target;
  for (x = target; x->n > 2 * h->d; x = x->parent) {
    node_t *r = split(h, x);
    if (!x->parent) {
      node_t *root = spare_take(h, x->level + 1);
      root->kid[0] = x;
      root->kid[1] = r;
      root->n = 2;
      x->parent = r->parent = root;
      recompute(h, root);
      h->root = root;
      break;
    }
    kid_insert_at(x->parent, kid_index(x->parent, x) + 1, r);
  }
  l->tmp = NULL;
  release_loads(h);
  spares_free(h); /* none left unless the plan over-counted */
  h->nleaves++;
  changed(h);
  return ST_OK;
}

/* ---- remove ---- */

/* The sibling x borrows from or merges with: the left one if any, else the right one. */
static node_t *sibling_of(const node_t *x, int *is_left) {
  const node_t *g = x->parent;
  uint32_t i = kid_index(g, x);
  *is_left = i > 0;
  return g->kid[i > 0 ? i - 1 : i + 1];
}

int hierarchy_remove(hierarchy_t *h, uint64_t id) {
  uint64_t v;
  if (!u64_map_get(&h->map, id, &v)) return ST_NOT_FOUND;
  leaf_t *l = (leaf_t *)(uintptr_t)v;
  node_t *p = l->parent;

  /* Plan the level-0 work and load what it reads: p's other leaves, and the sibling's
     leaves when p will borrow from it (the sibling's filter is then recomputed). */
  int rc = ST_OK;
  for (uint32_t i = 0; i < p->n && rc == ST_OK; i++)
    if (p->kid[i] != l) rc = preload(h, p->kid[i]);
  if (rc == ST_OK && p->parent && p->parent->n > 1 && p->n - 1 < h->d) {
    int is_left;
    node_t *s = sibling_of(p, &is_left);
    if (s->n > h->d) rc = preload_kids(h, s);
  }
  if (rc != ST_OK) {
    release_loads(h);
    return rc;
  }

  /* Commit. */
  kid_remove_at(p, kid_index(p, l));
  u64_map_del(&h->map, id, NULL);
  free(l);
  h->nleaves--;
  recompute(h, p);
  node_t *x = p;
  while (x->parent) {
    node_t *g = x->parent;
    if (x->n < h->d && g->n == 1) { /* the paper's tree: an only child, no sibling */
      if (x->n == 0) {
        kid_remove_at(g, 0);
        node_free(h, x);
      }
    } else if (x->n < h->d) {
      int is_left;
      node_t *s = sibling_of(x, &is_left);
      if (s->n > h->d) { /* borrow the child next to x */
        uint32_t from = is_left ? s->n - 1 : 0;
        void *kid = s->kid[from];
        kid_remove_at(s, from);
        kid_insert_at(x, is_left ? 0 : x->n, kid);
        recompute(h, s);
        recompute(h, x);
      } else { /* merge the right one into the left one */
        node_t *left = is_left ? s : x, *right = is_left ? x : s;
        for (uint32_t i = 0; i < right->n; i++) {
          left->kid[left->n] = right->kid[i];
          set_parent(left, left->n++);
        }
        bits_or(left->words, right->words, h->nwords);
        left->nleaves += right->nleaves;
        kid_remove_at(g, kid_index(g, right));
        node_free(h, right);
      }
    }
    recompute(h, g);
    x = g;
  }
  release_loads(h);
  /* Shrink the root. */
  while (h->root->level > 0 && h->root->n == 1) {
    node_t *old = h->root;
    h->root = old->kid[0];
    h->root->parent = NULL;
    node_free(h, old);
  }
  if (h->root->n == 0) {
    node_free(h, h->root);
    h->root = NULL;
  }
  changed(h);
  return ST_OK;
}

/* ---- bottom-up builds ---- */

/* Size of group g of the c items of a level, *groups receives the count. The paper's: groups
   of exactly d, the last one takes the rest. The others: groups of 2d, the last two
   rebalanced so that none has fewer than d. */
static uint32_t group_size(const hierarchy_t *h, size_t c, size_t g, size_t *groups) {
  uint32_t d = h->d;
  if (h->placement == HIERARCHY_PAPER) {
    *groups = (c + d - 1) / d;
    return (uint32_t)(g + 1 < *groups ? d : c - (*groups - 1) * d);
  }
  size_t cap = 2 * (size_t)d;
  if (c <= cap) {
    *groups = 1;
    return (uint32_t)c;
  }
  size_t ng = (c + cap - 1) / cap;
  size_t r = c - (ng - 1) * cap;
  *groups = ng;
  if (r >= d || ng < 2) return (uint32_t)(g + 1 < ng ? cap : r);
  if (g + 2 < ng) return (uint32_t)cap;
  return (uint32_t)(g + 2 == ng ? d + r : d);
}

int hierarchy_build(hierarchy_t *h, const uint64_t *ids, const uint64_t *const *words, size_t n) {
  u64_map_t map;
  u64_map_init(&map);
  leaf_t **leaves = NULL;
  node_t **cur = NULL, **next = NULL;
  size_t ncur = 0, nleaves = 0;
  int rc = u64_map_reserve(&map, n);
  if (rc == ST_OK && n > 0) {
    leaves = calloc(n, sizeof *leaves);
    cur = calloc(n, sizeof *cur);
    next = calloc(n, sizeof *next);
    if (!leaves || !cur || !next) rc = ST_E_NOMEM;
  }
  if (rc == ST_OK && n > 0 && !h->newleaf && !(h->newleaf = malloc(h->nwords * sizeof(uint64_t))))
    rc = ST_E_NOMEM;
  for (size_t i = 0; i < n && rc == ST_OK; i++) {
    if (u64_map_get(&map, ids[i], NULL) || (!words[i] && !h->has_source)) {
      rc = ST_E_INVALID;
    } else if (!(leaves[i] = malloc(sizeof(leaf_t)))) {
      rc = ST_E_NOMEM;
    } else {
      nleaves = i + 1;
      *leaves[i] = (leaf_t){.id = ids[i], .words = words[i], .tmp = NULL, .parent = NULL};
      u64_map_put(&map, ids[i], (uint64_t)(uintptr_t)leaves[i]); /* reserved */
    }
  }
  /* Level 0: the leaves in order, non-resident ones loaded one at a time. */
  size_t ng = 0;
  for (size_t g = 0, at = 0; rc == ST_OK && n > 0 && (g == 0 || g < ng); g++) {
    uint32_t sz = group_size(h, n, g, &ng);
    node_t *x = node_alloc(h, 0);
    if (!x) {
      rc = ST_E_NOMEM;
      break;
    }
    cur[ncur++] = x;
    memset(x->words, 0, h->nwords * sizeof(uint64_t));
    for (uint32_t i = 0; i < sz && rc == ST_OK; i++, at++) {
      leaf_t *l = leaves[at];
      x->kid[x->n++] = l;
      l->parent = x;
      const uint64_t *w = l->words;
      if (!w) {
        rc = h->source.load(h->source.ctx, l->id, h->newleaf);
        w = h->newleaf;
      }
      if (rc == ST_OK) bits_or(x->words, w, h->nwords);
    }
    x->nleaves = x->n;
  }
  /* Upper levels until one node remains. */
  for (uint32_t level = 1; rc == ST_OK && ncur > 1; level++) {
    size_t nn = 0;
    for (size_t g = 0, at = 0; g == 0 || g < ng; g++) {
      uint32_t sz = group_size(h, ncur, g, &ng);
      node_t *x = node_alloc(h, level);
      if (!x) {
        rc = ST_E_NOMEM;
        break;
      }
      next[nn++] = x;
      for (uint32_t i = 0; i < sz; i++, at++) {
        x->kid[x->n++] = cur[at];
        cur[at]->parent = x;
      }
      recompute(h, x);
    }
    if (rc != ST_OK) {
      for (size_t i = 0; i < nn; i++) node_free(h, next[i]); /* children stay in cur */
      break;
    }
    node_t **t = cur;
    cur = next;
    next = t;
    ncur = nn;
  }
  if (rc != ST_OK) { /* undo: the current top level owns every attached node and leaf */
    for (size_t i = 0; i < nleaves; i++) /* first: tree_free frees the attached ones */
      if (leaves[i] && !leaves[i]->parent) free(leaves[i]);
    for (size_t i = 0; i < ncur; i++) tree_free(h, cur[i]);
    free(leaves);
    free(cur);
    free(next);
    u64_map_release(&map);
    return rc;
  }
  tree_free(h, h->root);
  u64_map_release(&h->map);
  h->map = map;
  h->root = ncur ? cur[0] : NULL;
  if (h->root) h->root->parent = NULL;
  h->nleaves = n;
  h->stale = 0;
  free(leaves);
  free(cur);
  free(next);
  return ST_OK;
}

static void collect_leaves(const node_t *x, leaf_t **out, size_t *n) {
  for (uint32_t i = 0; i < x->n; i++) {
    if (x->level == 0)
      out[(*n)++] = x->kid[i];
    else
      collect_leaves(x->kid[i], out, n);
  }
}

static int by_leaf_id(const void *a, const void *b) {
  uint64_t x = (*(leaf_t *const *)a)->id, y = (*(leaf_t *const *)b)->id;
  return (x > y) - (x < y);
}

/* The paper's tree over the current leaves, in id (table) order. */
static int rebuild_paper(hierarchy_t *h) {
  size_t n = h->nleaves;
  leaf_t **ls = malloc((n ? n : 1) * sizeof *ls);
  uint64_t *ids = malloc((n ? n : 1) * sizeof *ids);
  const uint64_t **ws = malloc((n ? n : 1) * sizeof *ws);
  int rc = ls && ids && ws ? ST_OK : ST_E_NOMEM;
  if (rc == ST_OK) {
    size_t got = 0;
    if (h->root) collect_leaves(h->root, ls, &got);
    qsort(ls, got, sizeof *ls, by_leaf_id);
    for (size_t i = 0; i < got; i++) {
      ids[i] = ls[i]->id;
      ws[i] = ls[i]->words;
    }
    rc = hierarchy_build(h, ids, ws, got);
    h->rebuilds++;
  }
  free(ls);
  free(ids);
  free(ws);
  return rc;
}

uint64_t hierarchy_rebuild_count(const hierarchy_t *h) {
  return h->rebuilds;
}

void hierarchy_batch_begin(hierarchy_t *h) {
  h->batch = 1;
}

int hierarchy_batch_end(hierarchy_t *h) {
  h->batch = 0;
  return h->placement == HIERARCHY_PAPER && h->stale ? rebuild_paper(h) : ST_OK;
}

/* ---- search ---- */

static int leaf_maybe(const hierarchy_t *h, const leaf_t *l, const probe_t *p) {
  if (l->words) return bits_test_probe(l->words, p);
  return h->source.probe(h->source.ctx, l->id, p) != 0;
}

int hierarchy_search(const hierarchy_t *h, const probe_t *p, u64vec_t *out, probe_stats_t *st) {
  uint64_t ip = 0, im = 0, lp = 0, pos = 0;
  int rc = ST_OK;
  struct {
    const node_t *x;
    uint32_t next;
  } stack[MAX_DEPTH];
  int top = -1;
  if (h->root) {
    ip++;
    if (bits_test_probe(h->root->words, p)) {
      im++;
      stack[0].x = h->root;
      stack[0].next = 0;
      top = 0;
    }
  }
  while (top >= 0 && rc == ST_OK) {
    const node_t *x = stack[top].x;
    if (x->level == 0) {
      for (uint32_t i = 0; i < x->n && rc == ST_OK; i++) {
        const leaf_t *l = x->kid[i];
        lp++;
        if (leaf_maybe(h, l, p)) {
          pos++;
          rc = u64vec_push(out, l->id);
        }
      }
      top--;
    } else if (stack[top].next == x->n) {
      top--;
    } else {
      const node_t *c = x->kid[stack[top].next++];
      ip++;
      if (bits_test_probe(c->words, p)) {
        im++;
        top++;
        stack[top].x = c;
        stack[top].next = 0;
      }
    }
  }
  if (st) {
    st->internal_probes += ip;
    st->internal_maybe += im;
    st->leaf_probes += lp;
    st->leaf_positives += pos;
  }
  return rc;
}

/* ---- validate ---- */

typedef struct vstate {
  const hierarchy_t *h;
  err_t *err;
  uint64_t *acc, *buf;
  size_t leaves;
} vstate_t;

/* rightmost: x is the last node of its level. */
static int validate_node(vstate_t *v, const node_t *x, const node_t *parent, uint32_t level,
                         uint32_t index, int rightmost) {
  const hierarchy_t *h = v->h;
  if (x->parent != parent)
    return err_set(v->err, ST_E_CORRUPT,
                   "hierarchy: level %" PRIu32 " node (child %" PRIu32 "): wrong parent link",
                   level, index);
  if (x->level != level)
    return err_set(v->err, ST_E_CORRUPT,
                   "hierarchy: node (child %" PRIu32 ") at level %" PRIu32 " says level %" PRIu32
                   ": leaves not at equal depth",
                   index, level, x->level);
  uint32_t lo = parent ? h->d : (x->level == 0 ? 1 : 2), hi = 2 * h->d;
  if (h->placement == HIERARCHY_PAPER) {
    /* Exactly d, the last node of a level fewer; after a failed rebuild (stale), B+-tree
       steps on a paper-shaped tree: anything from 1 up. */
    lo = h->stale || rightmost ? 1 : h->d;
    if (!h->stale) hi = h->d;
  }
  if (x->n < lo || x->n > hi)
    return err_set(v->err, ST_E_CORRUPT,
                   "hierarchy: level %" PRIu32 " node (child %" PRIu32 "): %" PRIu32
                   " children, outside %" PRIu32 "..%" PRIu32,
                   level, index, x->n, lo, hi);
  uint64_t nl = 0;
  for (uint32_t i = 0; i < x->n; i++) {
    if (x->level == 0) {
      const leaf_t *l = x->kid[i];
      uint64_t mv;
      if (l->parent != x)
        return err_set(v->err, ST_E_CORRUPT, "hierarchy: leaf %" PRIu64 ": wrong parent link",
                       l->id);
      if (!u64_map_get(&h->map, l->id, &mv) || mv != (uint64_t)(uintptr_t)l)
        return err_set(v->err, ST_E_CORRUPT,
                       "hierarchy: leaf %" PRIu64 ": not in the id map, or present twice", l->id);
      nl++;
      v->leaves++;
    } else {
      int rc = validate_node(v, x->kid[i], x, level - 1, i, rightmost && i + 1 == x->n);
      if (rc != ST_OK) return rc;
      nl += ((const node_t *)x->kid[i])->nleaves;
    }
  }
  if (nl != x->nleaves)
    return err_set(v->err, ST_E_CORRUPT,
                   "hierarchy: level %" PRIu32 " node (child %" PRIu32 "): leaf count %" PRIu64
                   " but %" PRIu64 " leaves below",
                   level, index, x->nleaves, nl);
  /* The filter must equal the OR of the children (children were checked first). */
  memset(v->acc, 0, h->nwords * sizeof(uint64_t));
  for (uint32_t i = 0; i < x->n; i++) {
    const uint64_t *w;
    if (x->level == 0 && !((const leaf_t *)x->kid[i])->words) {
      const leaf_t *l = x->kid[i];
      int rc = h->source.load(h->source.ctx, l->id, v->buf);
      if (rc != ST_OK)
        return err_set(v->err, rc, "hierarchy: leaf %" PRIu64 ": load failed", l->id);
      w = v->buf;
    } else {
      w = kid_words(x, i);
    }
    bits_or(v->acc, w, h->nwords);
  }
  for (size_t i = 0; i < h->nwords; i++)
    if (v->acc[i] != x->words[i])
      return err_set(v->err, ST_E_CORRUPT,
                     "hierarchy: level %" PRIu32 " node (child %" PRIu32 "): word %zu is %#" PRIx64
                     ", the OR of its children is %#" PRIx64,
                     level, index, i, x->words[i], v->acc[i]);
  return ST_OK;
}

int hierarchy_validate(const hierarchy_t *h, err_t *err) {
  if (!h->root) {
    if (h->nleaves != 0 || u64_map_count(&h->map) != 0)
      return err_set(err, ST_E_CORRUPT, "hierarchy: no root but %zu leaves", h->nleaves);
    return ST_OK;
  }
  if (h->root->level == 0 && h->root->n == 1 && h->nleaves != 1)
    return err_set(err, ST_E_CORRUPT, "hierarchy: root has one leaf of %zu", h->nleaves);
  vstate_t v = {.h = h, .err = err, .leaves = 0};
  v.acc = malloc(h->nwords * sizeof(uint64_t));
  v.buf = malloc(h->nwords * sizeof(uint64_t));
  int rc = ST_OK;
  if (!v.acc || !v.buf)
    rc = err_set(err, ST_E_NOMEM, "hierarchy: validate: no memory");
  else
    rc = validate_node(&v, h->root, NULL, h->root->level, 0, 1);
  free(v.acc);
  free(v.buf);
  if (rc != ST_OK) return rc;
  if (v.leaves != h->nleaves || u64_map_count(&h->map) != h->nleaves)
    return err_set(err, ST_E_CORRUPT,
                   "hierarchy: %zu leaves in the tree, %zu counted, %zu in the id map", v.leaves,
                   h->nleaves, u64_map_count(&h->map));
  return ST_OK;
}

/* ---- accessors and stats ---- */

size_t hierarchy_leaf_count(const hierarchy_t *h) {
  return h->nleaves;
}

int hierarchy_contains(const hierarchy_t *h, uint64_t id) {
  return u64_map_get(&h->map, id, NULL);
}

uint32_t hierarchy_height(const hierarchy_t *h) {
  return h->root ? h->root->level + 1 : 0;
}

uint32_t hierarchy_order(const hierarchy_t *h) {
  return h->d;
}

static void count_levels(const hierarchy_t *h, const node_t *x, hierarchy_level_stats_t *out,
                         uint32_t cap) {
  if (x->level < cap) {
    out[x->level].nodes++;
    out[x->level].bytes += node_bytes(h);
  }
  if (x->level > 0)
    for (uint32_t i = 0; i < x->n; i++) count_levels(h, x->kid[i], out, cap);
}

uint32_t hierarchy_level_stats(const hierarchy_t *h, hierarchy_level_stats_t *out, uint32_t cap) {
  uint32_t levels = hierarchy_height(h);
  for (uint32_t i = 0; i < cap && i < levels; i++)
    out[i] = (hierarchy_level_stats_t){.level = i, .nodes = 0, .bytes = 0};
  if (h->root && cap > 0) count_levels(h, h->root, out, cap < levels ? cap : levels);
  return levels;
}

size_t hierarchy_size_in_bytes(const hierarchy_t *h) {
  return sizeof *h + (size_t)h->nnodes * node_bytes(h) + h->nleaves * sizeof(leaf_t) +
         u64_map_size_in_bytes(&h->map) + MAX_DEPTH * sizeof(node_t *) +
         h->pool_cap * (h->nwords * sizeof(uint64_t) + sizeof(uint64_t *) + sizeof(leaf_t *)) +
         (h->newleaf ? h->nwords * sizeof(uint64_t) : 0);
}

int hierarchy_debug_flip_bit(hierarchy_t *h, uint32_t level, uint64_t pos) {
  if (!h->root || level > h->root->level || pos >= h->m) return ST_E_INVALID;
  node_t *x = h->root;
  while (x->level > level) x = x->kid[0];
  x->words[pos >> 6] ^= 1ull << (pos & 63);
  return ST_OK;
}
