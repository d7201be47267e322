/* Fuzz target: attributes (query/attr.c): the declaration parser, every extractor, the integer
 * reader and the stored list's decoder.
 *
 * The input is split at its first NUL byte (none: the whole input is both parts): the part
 * before is a declaration, the part after a value.
 *   - The declaration is parsed; one that parses formats to a canonical form that parses to
 *     the same canonical form, and extracts the value.
 *   - The value goes through one spec of each extractor kind, with and without :int.
 *     Invariants: no error but out-of-memory; a count that matches the calls; an :int term
 *     is 8 bytes; `value` gives the value and bytes:OFF:LEN its slice, if it holds it.
 *     A json: spec's terms are the same, in the same order, whether the value is read by the
 *     scanner (query/json_scan.h) or by json-c alone (attr_extract_reference); and
 *     attr_extract_each over every spec at once reports, per spec, attr_extract's count.
 *   - A declaration that parses as a composite (pair:A,B) is checked in a list with its
 *     members declared (accepted) and without them (refused, naming the missing one).
 *   - The value is hashed under x = json:a, y = json:b:int and xy = pair:x,y (query/terms.h):
 *     the composite's items are exactly the pair term of every term of x with every term of
 *     y, or the overflow term alone beyond ATTR_PAIR_MAX_TERMS pairs, or none when either
 *     member has no term.
 *   - The whole input is read by attr_int_parse, checked against a 128-bit reference.
 *   - The whole input is decoded as a stored list, as given and with its checksum made
 *     right; a list that decodes encodes and decodes again to the same declarations.
 */
#include "fuzz_util.h"

#include "query/attr.h"
#include "query/terms.h"

typedef struct seen {
  int calls;
  const attr_spec_t *spec;
  const uint8_t *value;
  size_t len;
} seen_t;

static int check_term(void *arg, const void *term, size_t len) {
  seen_t *s = arg;
  s->calls++;
  fuzz_check(term != NULL || len == 0);
  if (s->spec->is_int) {
    fuzz_check(len == ATTR_INT_TERM_BYTES);
  } else if (s->spec->kind == ATTR_VALUE) {
    fuzz_check(len == s->len && (len == 0 || memcmp(term, s->value, len) == 0));
  } else if (s->spec->kind == ATTR_PAIR) {
    fuzz_check(0); /* a composite's terms are made by terms.h, never extracted */
  } else if (s->spec->kind == ATTR_BYTES) {
    fuzz_check(len == s->spec->length && memcmp(term, s->value + s->spec->offset, len) == 0);
  } else {
    fuzz_check(len <= s->len); /* a field or a string is never longer than the value */
  }
  return 0;
}

/* An order-sensitive digest of the terms a reader gave (FNV-1a over each length and term). */
typedef struct digest {
  uint64_t h;
  int n;
} digest_t;

static int digest_term(void *arg, const void *term, size_t len) {
  digest_t *d = arg;
  const uint8_t *p = term;
  d->h = (d->h ^ len) * 0x100000001b3ull;
  for (size_t i = 0; i < len; i++) d->h = (d->h ^ p[i]) * 0x100000001b3ull;
  d->n++;
  return 0;
}

/* Returns attr_extract's count. */
static int extract(const attr_spec_t *spec, const uint8_t *value, size_t len) {
  seen_t s = {0, spec, value, len};
  int n = attr_extract(spec, value, len, check_term, &s);
  fuzz_check(n >= 0 || n == ST_E_NOMEM);
  if (n >= 0) fuzz_check(n == s.calls);
  if (spec->kind == ATTR_JSON && n >= 0) {
    digest_t a = {0xcbf29ce484222325ull, 0}, b = a;
    int na = attr_extract(spec, value, len, digest_term, &a);
    int nb = attr_extract_reference(spec, value, len, digest_term, &b);
    if (na >= 0 && nb >= 0) fuzz_check(na == nb && a.h == b.h && a.n == b.n);
  }
  return n;
}

static int count_each(void *arg, size_t attr, const void *term, size_t len) {
  (void)term, (void)len;
  ((int *)arg)[attr]++;
  return 0;
}

static const char *const kinds[] = {
    "j=json:a", "j=json:a.b",  "j=json:a:int", "c=csv:1",         "c=csv:2", "c=csv:3:int",
    "t=tsv:2",  "t=tsv:1:int", "b=bytes:1:4",  "b=bytes:0:1:int", "v=value", "v=value:int",
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

/* attr_int_parse's reference: sign, digits, in range, nothing else. */
static int int_reference(const uint8_t *p, size_t n, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  if (i < n && (p[i] == '+' || p[i] == '-')) neg = p[i++] == '-';
  if (i == n) return -1;
  __int128 v = 0;
  for (; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') return -1;
    v = v * 10 + (p[i] - '0');
    if (v > (__int128)INT64_MAX + 1) return -1;
  }
  if (neg) v = -v;
  if (v > INT64_MAX || v < INT64_MIN) return -1;
  *out = (int64_t)v;
  return 0;
}

static void decode_list(const uint8_t *data, size_t size) {
  attr_spec_t *specs;
  size_t n;
  err_t err;
  if (attr_specs_decode(data, size, "fuzz", &specs, &n, &err) != ST_OK) return;
  uint8_t *buf;
  size_t len;
  if (attr_specs_encode(specs, n, &buf, &len, &err) == ST_OK) {
    attr_spec_t *again;
    size_t m;
    fuzz_check(attr_specs_decode(buf, len, "fuzz", &again, &m, &err) == ST_OK && m == n);
    for (size_t i = 0; i < n; i++) {
      char a[ATTR_MAX_DECL_BYTES + 1], b[ATTR_MAX_DECL_BYTES + 1];
      attr_spec_format(&specs[i], a, sizeof a);
      attr_spec_format(&again[i], b, sizeof b);
      fuzz_check(strcmp(a, b) == 0);
    }
    attr_specs_free(again, m);
    free(buf);
  }
  attr_specs_free(specs, n);
}

/* A member's terms, copied. */
typedef struct terms_of {
  size_t n;
  uint8_t *bytes[ATTR_PAIR_MAX_TERMS + 1];
  size_t len[ATTR_PAIR_MAX_TERMS + 1];
} terms_of_t;

static int keep(void *arg, const void *term, size_t len) {
  terms_of_t *t = arg;
  if (t->n > ATTR_PAIR_MAX_TERMS) return 0; /* counted, not kept: the overflow is certain */
  t->bytes[t->n] = malloc(len ? len : 1);
  fuzz_check(t->bytes[t->n] != NULL);
  if (len) memcpy(t->bytes[t->n], term, len);
  t->len[t->n++] = len;
  return 0;
}

typedef struct hashes {
  size_t n;
  uint64_t h[2 * ATTR_PAIR_MAX_TERMS + 8];
  int over; /* more given than h holds */
} hashes_t;

static void take(void *arg, uint64_t h) {
  hashes_t *g = arg;
  if (g->n == sizeof g->h / sizeof g->h[0]) {
    g->over = 1;
    return;
  }
  g->h[g->n++] = h;
}

static int given(const hashes_t *g, uint64_t h) {
  for (size_t i = 0; i < g->n; i++)
    if (g->h[i] == h) return 1;
  return 0;
}

#define PAIR_SEED 0x7061697273656564ull

/* The composite's items of value (see the header). */
static void check_pairs(const uint8_t *value, size_t vlen) {
  static const char *const decl[3] = {"x=json:a", "y=json:b:int", "xy=pair:x,y"};
  attr_spec_t *specs = calloc(3, sizeof *specs);
  fuzz_check(specs != NULL);
  for (int i = 0; i < 3; i++) fuzz_check(attr_spec_parse(decl[i], &specs[i], NULL) == ST_OK);
  terms_t *t;
  err_t err;
  if (terms_create(specs, 3, PAIR_SEED, &t, &err) != ST_OK) { /* json-c missing: no JSON */
    attr_specs_free(specs, 3);
    return;
  }
  terms_of_t *x = calloc(1, sizeof *x), *y = calloc(1, sizeof *y);
  hashes_t *g = calloc(1, sizeof *g);
  fuzz_check(x && y && g);
  int nx = attr_extract(terms_spec(t, 0), value, vlen, keep, x);
  int ny = attr_extract(terms_spec(t, 1), value, vlen, keep, y);
  int rc = terms_hash_value(t, value, vlen, PAIR_SEED, 0, take, g);
  fuzz_check(rc >= 0 || rc == ST_E_NOMEM);
  if (rc >= 0 && nx >= 0 && ny >= 0 && !g->over) {
    uint64_t overflow = terms_hash_term(t, 2, ATTR_PAIR_OVERFLOW_TERM, 0, PAIR_SEED);
    size_t pairs = (size_t)nx * (size_t)ny;
    fuzz_check(given(g, overflow) == (pairs > ATTR_PAIR_MAX_TERMS));
    for (size_t i = 0; pairs <= ATTR_PAIR_MAX_TERMS && i < x->n; i++)
      for (size_t j = 0; j < y->n; j++) {
        uint8_t *buf = malloc(attr_pair_term_bytes(x->len[i], y->len[j]));
        fuzz_check(buf != NULL);
        size_t n = attr_pair_term(x->bytes[i], x->len[i], y->bytes[j], y->len[j], buf);
        fuzz_check(given(g, terms_hash_term(t, 2, buf, n, PAIR_SEED)));
        free(buf);
      }
  }
  for (size_t i = 0; i < x->n; i++) free(x->bytes[i]);
  for (size_t i = 0; i < y->n; i++) free(y->bytes[i]);
  free(x);
  free(y);
  free(g);
  terms_destroy(t);
}

/* A composite declaration: accepted with its members declared, refused without. */
static void check_pair_list(const attr_spec_t *spec) {
  attr_spec_t list[3];
  char d[2][ATTR_MAX_DECL_BYTES + 1];
  for (int i = 0; i < 2; i++) {
    snprintf(d[i], sizeof d[i], "%s=value", spec->member[i]);
    fuzz_check(attr_spec_parse(d[i], &list[i], NULL) == ST_OK);
  }
  list[2] = *spec;
  err_t err;
  fuzz_check(attr_specs_check(list, 3, &err) == ST_OK);
  fuzz_check(attr_specs_check(list + 1, 2, &err) == ST_E_INVALID);
  fuzz_check(strstr(err.msg, " is not declared") != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *c = fuzz_copy(data, size); /* NUL-terminated */
  const uint8_t *nul = memchr(c, 0, size);
  const uint8_t *value = nul ? nul + 1 : c;
  size_t vlen = nul ? size - (size_t)(value - c) : size;

  attr_spec_t spec;
  err_t err;
  if (attr_spec_parse((const char *)c, &spec, &err) == ST_OK) {
    char canon[ATTR_MAX_DECL_BYTES + 1], again[ATTR_MAX_DECL_BYTES + 1];
    size_t n = attr_spec_format(&spec, canon, sizeof canon);
    fuzz_check(n < sizeof canon);
    attr_spec_t s2;
    fuzz_check(attr_spec_parse(canon, &s2, &err) == ST_OK);
    attr_spec_format(&s2, again, sizeof again);
    fuzz_check(strcmp(canon, again) == 0);
    attr_spec_release(&s2);
    extract(&spec, value, vlen);
    if (spec.kind == ATTR_PAIR) check_pair_list(&spec);
    attr_spec_release(&spec);
  } else {
    fuzz_check(err.code == ST_E_INVALID || err.code == ST_E_NOMEM);
    fuzz_check(strstr(err.msg, ": column ") != NULL || err.code == ST_E_NOMEM);
  }

  attr_spec_t all[NKINDS];
  int single[NKINDS], each[NKINDS] = {0}, nomem = 0;
  uint32_t counts[NKINDS];
  for (size_t k = 0; k < NKINDS; k++) {
    fuzz_check(attr_spec_parse(kinds[k], &all[k], NULL) == ST_OK);
    single[k] = extract(&all[k], value, vlen);
    nomem |= single[k] < 0;
  }
  int rc = attr_extract_each(all, NKINDS, value, vlen, count_each, each, counts);
  fuzz_check(rc == ST_OK || rc == ST_E_NOMEM);
  for (size_t k = 0; k < NKINDS && rc == ST_OK && !nomem; k++)
    fuzz_check(single[k] == each[k] && counts[k] == (uint32_t)each[k]);
  for (size_t k = 0; k < NKINDS; k++) attr_spec_release(&all[k]);

  check_pairs(value, vlen);

  int64_t got = 0, want = 0;
  int ok = attr_int_parse((const char *)data, size, &got) == ST_OK;
  fuzz_check(ok == (int_reference(data, size, &want) == 0));
  if (ok) fuzz_check(got == want);

  free(c);
  fuzz_as_given_and_checksummed(data, size, decode_list);
  return 0;
}
