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
  _Atomic uint64_t values;
  _Atomic uint64_t *without; /* owned; n */
};

/* The hashes of one value, gathered before they are given, so that each is given once. */
#define STACK_HASHES 64
typedef struct gather {
  uint64_t seed;            /* the attribute's */
  uint64_t range_seed;      /* its range items' */
  const range_levels_t *lv; /* its stored levels (n 0: no range items) */
  uint64_t *h;              /* stack, or heap once it overflowed */
  size_t n, cap;
  int nomem;
  uint64_t stack[STACK_HASHES];
} gather_t;

static int on_term(void *arg, const void *term, size_t len) {
  gather_t *g = arg;
  if (g->n + 1 + g->lv->n > g->cap) {
    size_t cap = g->cap * 2 + g->lv->n;
    uint64_t *h = g->h == g->stack ? malloc(cap * sizeof *h) : realloc(g->h, cap * sizeof *h);
    if (!h) {
      g->nomem = 1;
      return 1; /* stop the extraction */
    }
    if (g->h == g->stack) memcpy(h, g->stack, sizeof g->stack);
    g->h = h;
    g->cap = cap;
  }
  g->h[g->n++] = bfh_value_hash(term, len, g->seed);
  /* The term's range items: one per stored level, of its order-preserving code. */
  uint64_t code = range_code_bytes(term, len);
  for (uint32_t i = 0; i < g->lv->n; i++) {
    range_probe_t r = {g->lv->j[i], code >> g->lv->j[i]};
    uint8_t item[RANGE_ITEM_BYTES];
    range_probe_item(&r, item);
    g->h[g->n++] = bfh_value_hash(item, sizeof item, g->range_seed);
  }
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
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

int terms_hash_value(const terms_t *t, const void *val, size_t len, uint64_t seed, unsigned flags,
                     value_hash_fn fn, void *arg) {
  gather_t g;
  g.h = g.stack;
  g.n = 0;
  g.cap = STACK_HASHES;
  g.nomem = 0;
  if (!val) val = ""; /* an empty value may come as NULL */
  int rc = ST_OK;
  for (size_t i = 0; i < t->n; i++) {
    g.seed = attr_seed(t, i, seed);
    g.lv = &t->specs[i].range;
    if (g.lv->n) g.range_seed = range_seed(t, i, seed);
    size_t before = g.n;
    int got = attr_extract(&t->specs[i], val, len, on_term, &g);
    if (got < 0 || g.nomem) {
      rc = got < 0 ? got : ST_E_NOMEM;
      break;
    }
    if ((flags & VALUE_TERMS_COUNT) && g.n == before)
      atomic_fetch_add_explicit(&t->without[i], 1, memory_order_relaxed);
  }
  if (rc == ST_OK) {
    if (flags & VALUE_TERMS_COUNT)
      atomic_fetch_add_explicit(&((terms_t *)t)->values, 1, memory_order_relaxed);
    if (g.n > 1) qsort(g.h, g.n, sizeof *g.h, cmp_u64);
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

static int hash_items(const value_terms_t *vt, const void *val, size_t len, uint64_t seed,
                      unsigned flags, value_hash_fn fn, void *arg) {
  return terms_hash_value((const terms_t *)vt, val, len, seed, flags, fn, arg);
}

int terms_create(attr_spec_t *specs, size_t n, uint64_t seed, terms_t **out, err_t *err) {
  *out = NULL;
  if (n == 0 || n > TERMS_MAX_ATTRS)
    return err_set(err, ST_E_INVALID, "attributes: %zu declared; 1 to %d", n, TERMS_MAX_ATTRS);
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
  }
  if (!t || !t->attr_seeds || !t->range_seeds || !t->without || !t->decls) {
    terms_destroy(t); /* t->specs is NULL yet: the caller's */
    return err_set(err, ST_E_NOMEM, "attributes: out of memory");
  }
  int nomem = 0;
  t->base.hash = hash_items;
  t->specs = specs;
  t->n = n;
  t->seed = seed;
  for (size_t i = 0; i < n; i++) {
    t->attr_seeds[i] = terms_attr_seed(&specs[i], seed);
    t->range_seeds[i] = terms_range_seed(&specs[i], seed);
    atomic_init(&t->without[i], 0);
    size_t len = attr_spec_format(&specs[i], NULL, 0);
    if ((t->decls[i] = malloc(len + 1)))
      attr_spec_format(&specs[i], t->decls[i], len + 1);
    else
      nomem = 1;
  }
  if (nomem) {
    t->specs = NULL; /* still the caller's */
    terms_destroy(t);
    return err_set(err, ST_E_NOMEM, "attributes: out of memory");
  }
  atomic_init(&t->values, 0);
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
