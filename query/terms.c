/* terms: a value's item hashes under the declared attributes; see terms.h. */
#include "query/terms.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_api.h"
#include "util/status.h"

struct terms {
  value_terms_t base; /* first: terms_value_terms hands it out, hash_items casts back */
  attr_spec_t *specs; /* owned */
  size_t n;
  uint64_t seed;         /* the seed attr_seeds were made for */
  uint64_t *attr_seeds;  /* owned; n */
  uint64_t *range_seeds; /* owned; n */
  char **decls;          /* owned; n canonical declarations, NAME=EXTRACTOR */
  uint64_t *zone_ids;    /* owned; n: terms_zone_id of each (0 for those without a zone) */
  _Atomic uint64_t values;
  _Atomic uint64_t *without; /* owned; n */
  int *pair_a, *pair_b;      /* owned; n: a composite's members (their indexes), -1 for others */
  uint8_t *member;           /* owned; n: 1 for an attribute some composite is made of */
  int npairs;                /* composites declared */
};

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The hashes of one value, gathered before they are given, so that each is given once. */
#define STACK_HASHES 64
#define STACK_TERMS 16
#define STACK_TERM_BYTES 512
/* A member's term, kept for its composites: bytes[off, off + len) of gather_t.bytes. */
typedef struct kept_term {
  uint32_t attr;
  size_t off, len;
} kept_term_t;

typedef struct gather {
  const terms_t *t;
  const uint64_t *seeds;       /* each attribute's */
  const uint64_t *range_seeds; /* each attribute's range items' */
  const attr_spec_t *specs;    /* each attribute's stored levels (range.n 0: no range items) */
  uint64_t *h;                 /* stack, or heap once it overflowed */
  size_t n, cap;
  int nomem;
  value_zone_fn zone; /* NULL: no zones asked */
  void *zone_arg;
  uint64_t stack[STACK_HASHES];
  /* Members' terms (only when composites are declared), in the order extracted: on the
     stack for a typical value, on the heap beyond. */
  kept_term_t *terms;
  size_t nterms, cap_terms;
  uint8_t *bytes;
  size_t nbytes, cap_bytes;
  kept_term_t terms_stack[STACK_TERMS];
  uint8_t bytes_stack[STACK_TERM_BYTES];
} gather_t;

/* Makes room for n more hashes in g. 0, or 1 with g->nomem set. */
static int room(gather_t *g, size_t n) {
  if (g->n + n <= g->cap) return 0;
  size_t cap = g->cap * 2 + n;
  uint64_t *h = g->h == g->stack ? malloc(cap * sizeof *h) : realloc(g->h, cap * sizeof *h);
  if (!h) {
    g->nomem = 1;
    return 1;
  }
  if (g->h == g->stack) memcpy(h, g->stack, sizeof g->stack);
  g->h = h;
  g->cap = cap;
  return 0;
}

/* Grows *v (of *cap elements of size, used of them in use; stack: its first array, not
   the heap's) to hold need. 0, or 1 out of memory. */
static int grow(void **v, const void *stack, size_t *cap, size_t used, size_t need, size_t size) {
  if (need <= *cap) return 0;
  size_t c = *cap * 2;
  while (c < need) c *= 2;
  void *nv = *v == stack ? malloc(c * size) : realloc(*v, c * size);
  if (!nv) return 1;
  if (*v == stack) memcpy(nv, stack, used * size);
  *v = nv;
  *cap = c;
  return 0;
}

/* Keeps term[0, len) of member attr for the composites made after the extraction. */
static int keep_term(gather_t *g, size_t attr, const void *term, size_t len) {
  if (grow((void **)&g->terms, g->terms_stack, &g->cap_terms, g->nterms, g->nterms + 1,
           sizeof *g->terms) ||
      grow((void **)&g->bytes, g->bytes_stack, &g->cap_bytes, g->nbytes, g->nbytes + len, 1)) {
    g->nomem = 1;
    return 1;
  }
  if (len) memcpy(g->bytes + g->nbytes, term, len);
  g->terms[g->nterms++] = (kept_term_t){(uint32_t)attr, g->nbytes, len};
  g->nbytes += len;
  return 0;
}

static int on_term(void *arg, size_t attr, const void *term, size_t len) {
  gather_t *g = arg;
  const range_levels_t *lv = &g->specs[attr].range;
  if (room(g, 1 + lv->n)) return 1; /* stop the extraction */
  if (g->t->member[attr] && keep_term(g, attr, term, len)) return 1;
  g->h[g->n++] = bfh_value_hash(term, len, g->seeds[attr]);
  /* The term's range items: one per stored level, of its order-preserving code, which the
     attribute's zone takes too. */
  uint64_t code = range_code_bytes(term, len);
  if (lv->n && g->zone) g->zone(g->zone_arg, g->t->zone_ids[attr], code);
  for (uint32_t i = 0; i < lv->n; i++) {
    range_probe_t r = {lv->j[i], code >> lv->j[i]};
    uint8_t item[RANGE_ITEM_BYTES];
    range_probe_item(&r, item);
    g->h[g->n++] = bfh_value_hash(item, sizeof item, g->range_seeds[attr]);
  }
  return 0;
}

/* Sorts h[0, n): insertion for the few items of a typical value, qsort beyond. */
#define INSERTION_MAX 16
static void sort_hashes(uint64_t *h, size_t n) {
  if (n > INSERTION_MAX) {
    qsort(h, n, sizeof *h, cmp_u64);
    return;
  }
  for (size_t i = 1; i < n; i++) {
    uint64_t x = h[i];
    size_t j = i;
    for (; j > 0 && h[j - 1] > x; j--) h[j] = h[j - 1];
    h[j] = x;
  }
}

/* *h, the hash of a composite's pair (a, b) under seed s: its term (attr_pair_term) hashed.
   0, or 1 out of memory. */
static int pair_hash(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, uint64_t s,
                     uint64_t *h) {
  uint8_t small[256];
  size_t n = attr_pair_term_bytes(alen, blen);
  uint8_t *buf = n <= sizeof small ? small : malloc(n);
  if (!buf) return 1;
  attr_pair_term(a, alen, b, blen, buf);
  *h = bfh_value_hash(buf, n, s);
  if (buf != small) free(buf);
  return 0;
}

/* Composite c's items of the value whose members' terms g kept: one per pair (a, b), or the
   overflow term alone beyond ATTR_PAIR_MAX_TERMS pairs, or none when a member has no term.
   Returns the items added, or -1 out of memory. */
static int add_pairs(gather_t *g, size_t c) {
  const terms_t *t = g->t;
  size_t na = 0, nb = 0;
  for (size_t i = 0; i < g->nterms; i++) {
    na += g->terms[i].attr == (uint32_t)t->pair_a[c];
    nb += g->terms[i].attr == (uint32_t)t->pair_b[c];
  }
  if (na == 0 || nb == 0) return 0;
  if (na * nb > ATTR_PAIR_MAX_TERMS) {
    if (room(g, 1)) return -1;
    g->h[g->n++] = bfh_value_hash(ATTR_PAIR_OVERFLOW_TERM, 0, g->seeds[c]);
    return 1;
  }
  if (room(g, na * nb)) return -1;
  const uint8_t *bytes = g->bytes;
  for (size_t i = 0; i < g->nterms; i++) {
    const kept_term_t *a = &g->terms[i];
    if (a->attr != (uint32_t)t->pair_a[c]) continue;
    for (size_t j = 0; j < g->nterms; j++) {
      const kept_term_t *b = &g->terms[j];
      if (b->attr != (uint32_t)t->pair_b[c]) continue;
      if (pair_hash(bytes + a->off, a->len, bytes + b->off, b->len, g->seeds[c], &g->h[g->n]))
        return -1;
      g->n++;
    }
  }
  return (int)(na * nb);
}

uint64_t terms_attr_seed(const attr_spec_t *spec, uint64_t seed) {
  if (spec->kind == ATTR_VALUE && !spec->is_int) return seed;
  return bfh_hash64(spec->name, strlen(spec->name), seed ^ TERMS_TAG_SALT);
}

static uint64_t attr_seed(const terms_t *t, size_t i, uint64_t seed) {
  return seed == t->seed ? t->attr_seeds[i] : terms_attr_seed(&t->specs[i], seed);
}

uint64_t terms_range_seed(const attr_spec_t *spec, uint64_t seed) {
  return bfh_hash64(spec->name, strlen(spec->name), seed ^ TERMS_RANGE_SALT);
}

static uint64_t range_seed(const terms_t *t, size_t i, uint64_t seed) {
  return seed == t->seed ? t->range_seeds[i] : terms_range_seed(&t->specs[i], seed);
}

/* terms_hash_value, with zone (may be NULL) called for each term of an attribute with a
   zone. */
static int hash_value(const terms_t *t, const void *val, size_t len, uint64_t seed, unsigned flags,
                      value_hash_fn fn, value_zone_fn zone, void *arg) {
  uint64_t other[TERMS_MAX_ATTRS], other_range[TERMS_MAX_ATTRS];
  gather_t g;
  g.zone = zone;
  g.zone_arg = arg;
  g.seeds = t->attr_seeds;
  g.range_seeds = t->range_seeds;
  g.specs = t->specs;
  if (seed != t->seed) {
    for (size_t i = 0; i < t->n; i++) {
      other[i] = attr_seed(t, i, seed);
      other_range[i] = range_seed(t, i, seed);
    }
    g.seeds = other;
    g.range_seeds = other_range;
  }
  g.t = t;
  g.h = g.stack;
  g.n = 0;
  g.cap = STACK_HASHES;
  g.nomem = 0;
  g.terms = g.terms_stack;
  g.bytes = g.bytes_stack;
  g.nterms = g.nbytes = 0;
  g.cap_terms = STACK_TERMS;
  g.cap_bytes = STACK_TERM_BYTES;
  if (!val) val = ""; /* an empty value may come as NULL */
  /* One extraction for every attribute: a JSON value is read once, not once per attribute. */
  uint32_t counts[TERMS_MAX_ATTRS];
  int rc = attr_extract_each(t->specs, t->n, val, len, on_term, &g, counts);
  /* The composites' pairs, from the members' terms this one reading kept. */
  for (size_t c = 0; rc == ST_OK && !g.nomem && t->npairs && c < t->n; c++) {
    if (t->pair_a[c] < 0) continue;
    int got = add_pairs(&g, c);
    if (got < 0) g.nomem = 1;
    counts[c] = got < 0 ? 0 : (uint32_t)got;
  }
  if (g.terms != g.terms_stack) free(g.terms);
  if (g.bytes != g.bytes_stack) free(g.bytes);
  if (rc == ST_OK && g.nomem) rc = ST_E_NOMEM;
  if (rc == ST_OK) {
    if (flags & VALUE_TERMS_COUNT) {
      for (size_t i = 0; i < t->n; i++)
        if (counts[i] == 0) atomic_fetch_add_explicit(&t->without[i], 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&((terms_t *)t)->values, 1, memory_order_relaxed);
    }
    sort_hashes(g.h, g.n);
    size_t given = 0;
    for (size_t i = 0; i < g.n; i++) {
      if (i && g.h[i] == g.h[i - 1]) continue;
      fn(arg, g.h[i]);
      given++;
    }
    rc = (int)given;
  }
  if (g.h != g.stack) free(g.h);
  return rc;
}

int terms_hash_value(const terms_t *t, const void *val, size_t len, uint64_t seed, unsigned flags,
                     value_hash_fn fn, void *arg) {
  return hash_value(t, val, len, seed, flags, fn, NULL, arg);
}

static int hash_items(const value_terms_t *vt, const void *val, size_t len, uint64_t seed,
                      unsigned flags, value_hash_fn fn, void *arg) {
  return hash_value((const terms_t *)vt, val, len, seed, flags, fn, NULL, arg);
}

static int hash_items_zoned(const value_terms_t *vt, const void *val, size_t len, uint64_t seed,
                            unsigned flags, value_hash_fn fn, value_zone_fn zone, void *arg) {
  return hash_value((const terms_t *)vt, val, len, seed, flags, fn, zone, arg);
}

static size_t zone_ids(const value_terms_t *vt, uint64_t *ids) {
  const terms_t *t = (const terms_t *)vt;
  size_t n = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->specs[i].range.n) ids[n++] = t->zone_ids[i];
  return n;
}

uint64_t terms_zone_id(const terms_t *t, size_t attr) {
  return t->specs[attr].range.n ? t->zone_ids[attr] : 0;
}

int terms_create(attr_spec_t *specs, size_t n, uint64_t seed, terms_t **out, err_t *err) {
  *out = NULL;
  if (n == 0 || n > TERMS_MAX_ATTRS)
    return err_set(err, ST_E_INVALID, "attributes: %zu declared; 1 to %d", n, TERMS_MAX_ATTRS);
  int prc = attr_specs_check(specs, n, err);
  if (prc != ST_OK) return prc;
  int json = 0;
  for (size_t i = 0; i < n; i++) {
    json |= specs[i].kind == ATTR_JSON;
    for (size_t j = 0; j < i; j++)
      if (strcmp(specs[i].name, specs[j].name) == 0)
        return err_set(err, ST_E_INVALID, "attributes: '%s' is declared twice", specs[i].name);
  }
  if (json) {
    int rc = jsonc_api_bind(err); /* found now, not as values without a term */
    if (rc != ST_OK) return rc;
  }
  terms_t *t = calloc(1, sizeof *t);
  if (t) {
    t->attr_seeds = calloc(n, sizeof *t->attr_seeds);
    t->range_seeds = calloc(n, sizeof *t->range_seeds);
    t->without = calloc(n, sizeof *t->without);
    t->decls = calloc(n, sizeof *t->decls);
    t->pair_a = calloc(n, sizeof *t->pair_a);
    t->pair_b = calloc(n, sizeof *t->pair_b);
    t->member = calloc(n, 1);
    t->zone_ids = calloc(n, sizeof *t->zone_ids);
  }
  if (!t || !t->attr_seeds || !t->range_seeds || !t->without || !t->decls || !t->pair_a ||
      !t->pair_b || !t->member || !t->zone_ids) {
    terms_destroy(t); /* t->specs is NULL yet: the caller's */
    return err_set(err, ST_E_NOMEM, "attributes: out of memory");
  }
  int nomem = 0;
  t->base.hash = hash_items;
  t->base.hash_zoned = hash_items_zoned;
  t->base.zone_ids = zone_ids;
  t->specs = specs;
  t->n = n;
  t->seed = seed;
  for (size_t i = 0; i < n; i++) {
    t->attr_seeds[i] = terms_attr_seed(&specs[i], seed);
    t->range_seeds[i] = terms_range_seed(&specs[i], seed);
    atomic_init(&t->without[i], 0);
    size_t len = attr_spec_format(&specs[i], NULL, 0);
    if ((t->decls[i] = malloc(len + 1))) {
      attr_spec_format(&specs[i], t->decls[i], len + 1);
      t->zone_ids[i] = bfh_hash64(t->decls[i], len, TERMS_ZONE_SALT);
    } else {
      nomem = 1;
    }
  }
  if (nomem) {
    t->specs = NULL; /* still the caller's */
    terms_destroy(t);
    return err_set(err, ST_E_NOMEM, "attributes: out of memory");
  }
  atomic_init(&t->values, 0);
  for (size_t i = 0; i < n; i++) {
    t->pair_a[i] = t->pair_b[i] = -1;
    if (specs[i].kind != ATTR_PAIR) continue;
    /* attr_specs_check found both members above */
    t->pair_a[i] = terms_find(t, specs[i].member[0], strlen(specs[i].member[0]));
    t->pair_b[i] = terms_find(t, specs[i].member[1], strlen(specs[i].member[1]));
    t->member[t->pair_a[i]] = t->member[t->pair_b[i]] = 1;
    t->npairs++;
  }
  *out = t;
  return ST_OK;
}

void terms_destroy(terms_t *t) {
  if (!t) return;
  for (size_t i = 0; t->decls && i < t->n; i++) free(t->decls[i]);
  free(t->decls);
  attr_specs_free(t->specs, t->n);
  free(t->attr_seeds);
  free(t->range_seeds);
  free((void *)t->without);
  free(t->pair_a);
  free(t->pair_b);
  free(t->member);
  free(t->zone_ids);
  free(t);
}

size_t terms_count(const terms_t *t) {
  return t ? t->n : 0;
}

const attr_spec_t *terms_spec(const terms_t *t, size_t i) {
  return &t->specs[i];
}

const char *terms_extractor_text(const terms_t *t, size_t i) {
  return t->decls[i] + strlen(t->specs[i].name) + 1;
}

int terms_find(const terms_t *t, const char *name, size_t len) {
  for (size_t i = 0; t && i < t->n; i++)
    if (strlen(t->specs[i].name) == len && memcmp(t->specs[i].name, name, len) == 0) return (int)i;
  return -1;
}

const value_terms_t *terms_value_terms(const terms_t *t) {
  return t ? &t->base : NULL;
}

uint64_t terms_hash_term(const terms_t *t, size_t attr, const void *term, size_t len,
                         uint64_t seed) {
  return bfh_value_hash(term ? term : "", len, attr_seed(t, attr, seed));
}

const range_levels_t *terms_range_levels(const terms_t *t, size_t attr) {
  return t->specs[attr].range.n ? &t->specs[attr].range : NULL;
}

uint64_t terms_hash_probe(const terms_t *t, size_t attr, const range_probe_t *r, uint64_t seed) {
  uint8_t item[RANGE_ITEM_BYTES];
  range_probe_item(r, item);
  if (r->level == 0) return terms_hash_term(t, attr, item + 1, RANGE_CODE_BYTES, seed);
  return bfh_value_hash(item, sizeof item, range_seed(t, attr, seed));
}

int terms_extract(void *t, int attr, const void *val, size_t len, attr_term_fn fn, void *fn_arg) {
  const terms_t *ts = t;
  return attr_extract(&ts->specs[attr], val ? val : "", len, fn, fn_arg);
}

int terms_pair(const terms_t *t, size_t attr, size_t *a, size_t *b) {
  if (t->pair_a[attr] < 0) return 0;
  *a = (size_t)t->pair_a[attr];
  *b = (size_t)t->pair_b[attr];
  return 1;
}

size_t terms_pair_count(const terms_t *t) {
  return t ? (size_t)t->npairs : 0;
}

int terms_lookup(void *t, const char *name, size_t len, int *is_int) {
  const terms_t *ts = t;
  int i = terms_find(ts, name, len);
  if (i >= 0 && is_int) *is_int = ts->specs[i].is_int;
  return i;
}

void terms_stats(const terms_t *t, size_t attr, terms_stats_t *st) {
  st->values = atomic_load_explicit(&((terms_t *)t)->values, memory_order_relaxed);
  st->without_term = atomic_load_explicit(&t->without[attr], memory_order_relaxed);
}

uint64_t terms_without_term_total(const terms_t *t) {
  uint64_t sum = 0;
  for (size_t i = 0; t && i < t->n; i++)
    sum += atomic_load_explicit(&t->without[i], memory_order_relaxed);
  return sum;
}
