/* The stand-alone secondary index; see standalone.h. */
#include "index/standalone.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "filters/hash.h"
#include "lsm/db.h"
#include "lsm_hooks/engines/engine.h"
#include "lsm_hooks/engines/validate.h"
#include "query/terms.h"
#include "util/coding.h"
#include "util/env.h"
#include "util/clock.h"

#define CLEAN_MARKER "CLOSED-CLEANLY" /* in the index directory while nothing is open */
#define EXACT_MARKER "EXACT"          /* in the index directory while it holds no stale entry */
#define KEY_STRIPE_SEED 0x73747269706573ull
#define VALUE_HASH_SEED 0x7361696478ull
#define ATTRS_RECORD "ATTRIBUTES"  /* in the index directory: the attributes it holds */
#define WHOLE_VALUE_LINE "value\n" /* the record's line for the whole value's entries */
/* The record's first line when the index holds tagged entries: their format (standalone.h). An
   index whose record lacks it (format 1) is built again at the open, as for other attributes. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define FORMAT_LINE "format " STR(STANDALONE_FORMAT) "\n"

/* A list of byte strings, each stored as varint32(length) then the bytes: the keys a search
   finds, and the (key, value) pairs the open replays from the database's logs. */
typedef struct items {
  uint8_t *data;
  size_t n, cap;
} items_t;

struct standalone {
  engine_t *engine; /* the database's (borrowed) */
  const engine_kind_t *kind;
  char *path;           /* the database's directory */
  const terms_t *terms; /* the database's attributes (borrowed); NULL: the whole value */
  int whole;            /* the index holds whole-value entries (the untagged format) */
  lsm_db_t *index;      /* bfh-standalone/ */
  char *dir;            /* path of bfh-standalone/ */
  env_t *io;
  pthread_mutex_t stripes[STANDALONE_STRIPES];
  /* Each stripe's writes begun plus ended: odd while one is in flight (standalone_trust_t). */
  _Atomic uint64_t writes[STANDALONE_STRIPES];
  _Atomic int exact; /* the index holds no stale entry (EXACT_MARKER) */
  void (*step_hook)(void *arg, int step);
  void *step_arg;
  _Atomic uint64_t entries_put, old_reads, old_read_ns;
  _Atomic uint64_t candidate_ns16; /* standalone_candidate_ns x 16; 0: none measured */
  uint64_t replayed_indexed, built_entries;
};

/* ---- The composite key ------------------------------------------------------------------- */

/* The prefix that names v: varint32(len v), then v or its hash (bfh_value_hash under
   VALUE_HASH_SEED: *hash if given, a search's one hash of v). Returns its length; buf holds
   at least 5 + 8 bytes, or 5 + len v when v is inline. */
static size_t encode_prefix(uint8_t *buf, const void *val, size_t val_len, const uint64_t *hash) {
  uint8_t *p = encode_varint32(buf, (uint32_t)val_len);
  if (val_len <= STANDALONE_INLINE_MAX) {
    if (val_len) memcpy(p, val, val_len);
    return (size_t)(p - buf) + val_len;
  }
  encode_fixed64(p, hash ? *hash : bfh_value_hash(val, val_len, VALUE_HASH_SEED));
  return (size_t)(p - buf) + 8;
}

static size_t prefix_bytes(size_t val_len) {
  return 5 + (val_len <= STANDALONE_INLINE_MAX ? val_len : 8);
}

/* One string of an items_t (borrowed from it): the prefix of one of a value's entries. */
typedef struct slice {
  const uint8_t *p;
  size_t n;
} slice_t;

static int items_add(items_t *l, const void *bytes, size_t len);
static const uint8_t *items_next(const uint8_t **p, const uint8_t *end, size_t *len);

/* Is spec the whole value, whose entries keep the untagged format? */
static int spec_is_whole(const attr_spec_t *spec) {
  return spec->kind == ATTR_VALUE && !spec->is_int;
}

/* Adds the untagged prefix of the whole value val to out. BFH_OK or BFH_E_NOMEM. */
static int add_whole(items_t *out, const void *val, size_t len) {
  uint8_t *buf = malloc(prefix_bytes(len));
  int rc = buf ? items_add(out, buf, encode_prefix(buf, val, len, NULL)) : BFH_E_NOMEM;
  free(buf);
  return rc;
}

/* The tagged entries' start for attribute name (format 2, standalone.h): the tag and the
   name. buf holds at least 2 + 5 + strlen(name) bytes; returns the length. */
static size_t encode_attr(uint8_t *buf, const char *name) {
  size_t name_len = strlen(name);
  buf[0] = STANDALONE_TAG_0;
  buf[1] = STANDALONE_TAG_1;
  uint8_t *p = encode_varint32(buf + 2, (uint32_t)name_len);
  memcpy(p, name, name_len);
  return (size_t)(p - buf) + name_len;
}

/* esc of a text term's first STANDALONE_TERM_MAX bytes (each 0x00 as 0x00 0xff), then, with
   close, the end mark 0x00 0x01. Without close it is what every term that starts with t
   starts with. buf holds at least text_bytes(len); returns the length. */
static size_t encode_text(uint8_t *buf, const void *t, size_t len, int close) {
  const uint8_t *b = t;
  size_t n = 0;
  if (len > STANDALONE_TERM_MAX) len = STANDALONE_TERM_MAX;
  for (size_t i = 0; i < len; i++) {
    buf[n++] = b[i];
    if (b[i] == 0) buf[n++] = 0xff;
  }
  if (close) buf[n++] = 0x00, buf[n++] = 0x01;
  return n;
}

static size_t text_bytes(size_t len) {
  return 2 * (len < STANDALONE_TERM_MAX ? len : STANDALONE_TERM_MAX) + 2;
}

/* The bytes of an attribute's term as its entries hold them, up to the key: an :int term's
   varint32(len) and bytes, a text term's encode_text (closed or not). buf holds at least
   term_bytes(len); returns the length. */
static size_t encode_term(uint8_t *buf, int is_int, const void *t, size_t len, int close) {
  return is_int ? encode_prefix(buf, t, len, NULL) : encode_text(buf, t, len, close);
}

static size_t term_bytes(size_t len) {
  size_t a = prefix_bytes(len), b = text_bytes(len);
  return a > b ? a : b;
}

typedef struct term_ctx {
  items_t *out;
  const attr_spec_t *spec;
  int rc;
} term_ctx_t;

/* attr_term_fn: adds the tagged prefix of one term to ctx->out. */
static int add_term(void *arg, const void *term, size_t len) {
  term_ctx_t *c = arg;
  uint8_t *buf = malloc(2 + 5 + strlen(c->spec->name) + term_bytes(len));
  if (!buf) return c->rc = BFH_E_NOMEM, 1;
  size_t n = encode_attr(buf, c->spec->name);
  n += encode_term(buf + n, c->spec->is_int, term, len, 1);
  if (items_add(c->out, buf, n) != BFH_OK) c->rc = BFH_E_NOMEM;
  free(buf);
  return c->rc != BFH_OK;
}

/* Appends to out the prefixes of val's entries: the untagged one of the whole value if the
   index holds whole values, and a tagged one per term of every other attribute. */
static int value_prefixes(const standalone_t *s, const void *val, size_t val_len, items_t *out,
                          err_t *err) {
  if (s->whole && add_whole(out, val, val_len) != BFH_OK)
    return err_set(err, BFH_E_NOMEM, "stand-alone index: out of memory");
  for (size_t i = 0; i < terms_count(s->terms); i++) {
    const attr_spec_t *spec = terms_spec(s->terms, i);
    if (spec_is_whole(spec)) continue;
    term_ctx_t c = {out, spec, BFH_OK};
    int n = terms_extract((void *)s->terms, (int)i, val, val_len, add_term, &c);
    if (c.rc != BFH_OK || n < 0)
      return err_set(err, c.rc != BFH_OK ? c.rc : n,
                     "stand-alone index: extracting attribute %s: %s", spec->name,
                     c.rc != BFH_OK ? "out of memory" : bfh_strerror(n));
  }
  return BFH_OK;
}

static int slice_cmp(const void *a, const void *b) {
  const slice_t *x = a, *y = b;
  size_t n = x->n < y->n ? x->n : y->n;
  int c = n ? memcmp(x->p, y->p, n) : 0;
  return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* The distinct prefixes of val's entries, sorted, into *out (malloc'd, pointing into *buf,
   which the caller frees with it); val NULL: none. */
static int value_slices(const standalone_t *s, const void *val, size_t val_len, items_t *buf,
                        slice_t **out, size_t *n, err_t *err) {
  *out = NULL;
  *n = 0;
  if (!val) return BFH_OK;
  int rc = value_prefixes(s, val, val_len, buf, err);
  size_t cap = 0;
  const uint8_t *p = buf->data, *end = buf->data + buf->n, *q;
  size_t len;
  for (; rc == BFH_OK && (q = items_next(&p, end, &len)); (*n)++) {
    if (*n == cap) {
      cap = cap ? 2 * cap : 8;
      slice_t *g = realloc(*out, cap * sizeof *g);
      if (!g) return err_set(err, BFH_E_NOMEM, "stand-alone index: out of memory");
      *out = g;
    }
    (*out)[*n] = (slice_t){q, len};
  }
  if (rc != BFH_OK) return rc;
  if (*n > 1) qsort(*out, *n, sizeof **out, slice_cmp);
  size_t u = 0;
  for (size_t i = 0; i < *n; i++)
    if (u == 0 || slice_cmp(&(*out)[u - 1], &(*out)[i]) != 0) (*out)[u++] = (*out)[i];
  *n = u;
  return BFH_OK;
}

/* Puts (put = 1) or deletes the entry prefix || key. */
static int index_entry(standalone_t *s, const slice_t *prefix, const void *key, size_t key_len,
                       int put, err_t *err) {
  uint8_t *ik = malloc(prefix->n + key_len + 1);
  if (!ik) return err_set(err, BFH_E_NOMEM, "stand-alone index: out of memory");
  memcpy(ik, prefix->p, prefix->n);
  memcpy(ik + prefix->n, key, key_len);
  size_t n = prefix->n + key_len;
  int rc = put ? lsm_put(s->index, ik, n, "", 0, err) : lsm_delete(s->index, ik, n, err);
  free(ik);
  if (rc == BFH_OK && put) atomic_fetch_add_explicit(&s->entries_put, 1, memory_order_relaxed);
  return rc;
}

/* Puts (put = 1) or deletes the entries of key for each of a[0, na) not in b[0, nb) (both
   sorted and distinct). */
static int index_diff(standalone_t *s, const void *key, size_t key_len, const slice_t *a, size_t na,
                      const slice_t *b, size_t nb, int put, err_t *err) {
  size_t j = 0;
  for (size_t i = 0; i < na; i++) {
    int c = 1;
    while (j < nb && (c = slice_cmp(&b[j], &a[i])) < 0) j++;
    if (j < nb && c == 0) continue;
    int rc = index_entry(s, &a[i], key, key_len, put, err);
    if (rc != BFH_OK) return rc;
  }
  return BFH_OK;
}

/* Puts every entry of (key, val). */
static int index_put(standalone_t *s, const void *key, size_t key_len, const void *val,
                     size_t val_len, err_t *err) {
  items_t buf = {NULL, 0, 0};
  slice_t *v;
  size_t nv;
  int rc = value_slices(s, val, val_len, &buf, &v, &nv, err);
  if (rc == BFH_OK) rc = index_diff(s, key, key_len, v, nv, NULL, 0, 1, err);
  free(v);
  free(buf.data);
  return rc;
}

/* ---- Writes ------------------------------------------------------------------------------ */

static size_t stripe_of(const void *key, size_t key_len) {
  return (size_t)(bfh_hash64(key, key_len, KEY_STRIPE_SEED) % STANDALONE_STRIPES);
}

static char *join(const char *a, const char *b);

/* Removes the exact marker, if the index directory has one, and syncs the removal. */
static int drop_exact_marker(standalone_t *s, err_t *err) {
  char *marker = join(s->dir, EXACT_MARKER);
  int rc = marker ? BFH_OK : err_set(err, BFH_E_NOMEM, "out of memory");
  if (rc == BFH_OK && env_exists(s->io, marker)) {
    rc = env_unlink(s->io, marker, err);
    if (rc == BFH_OK) rc = env_sync_dir(s->io, s->dir, err);
  }
  free(marker);
  return rc;
}

/* The index may hold a stale entry from now on: no search trusts it again until a build. The
   marker goes at once, so that an open after a crash finds it gone too; if its removal fails,
   the close tries again, and leaves no clean marker if that fails too (the next open then
   removes it). */
static void lose_exact(standalone_t *s) {
  err_t err;
  if (atomic_exchange(&s->exact, 0)) (void)drop_exact_marker(s, &err);
}

static void step(standalone_t *s, int where) {
  if (s->step_hook) s->step_hook(s->step_arg, where);
}

/* Step 1: *old is the key's value (malloc'd) or NULL when it has none. */
static int read_old(standalone_t *s, const void *key, size_t key_len, void **old, size_t *old_len,
                    err_t *err) {
  uint64_t t0 = clock_now_ns();
  int rc = s->engine->ops->get(s->engine, NULL, key, key_len, old, old_len, err);
  atomic_fetch_add_explicit(&s->old_reads, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->old_read_ns, clock_now_ns() - t0, memory_order_relaxed);
  if (rc == BFH_NOT_FOUND) {
    *old = NULL;
    return BFH_OK;
  }
  if (rc != BFH_OK) err_prefix(err, "stand-alone index: reading the old value: ");
  return rc;
}

/* The entries of a write of key from old (NULL: none) to val (NULL: a delete): first those
   of val are put, then the database's write (store), then those of old that val lacks go. */
static int write_entries(standalone_t *s, const void *key, size_t key_len, const void *old,
                         size_t old_len, const void *val, size_t val_len,
                         int (*store)(standalone_t *s, const void *key, size_t key_len,
                                      const void *val, size_t val_len, err_t *err),
                         err_t *err) {
  items_t ob = {NULL, 0, 0}, vb = {NULL, 0, 0};
  slice_t *o = NULL, *v = NULL;
  size_t no = 0, nv = 0;
  int rc = value_slices(s, old, old_len, &ob, &o, &no, err);
  if (rc == BFH_OK) rc = value_slices(s, val, val_len, &vb, &v, &nv, err);
  /* Every entry of val, those old has too: a put heals an entry a machine crash lost. */
  if (rc == BFH_OK) rc = index_diff(s, key, key_len, v, nv, NULL, 0, 1, err);
  if (rc == BFH_OK && val) step(s, STANDALONE_STEP_INDEXED);
  if (rc == BFH_OK) rc = store(s, key, key_len, val, val_len, err);
  if (rc == BFH_OK) {
    step(s, STANDALONE_STEP_STORED);
    rc = index_diff(s, key, key_len, o, no, v, nv, 0, err);
    if (rc != BFH_OK)
      err_prefix(err, "stand-alone index: the write is stored, but its old entries stay: ");
  }
  free(o);
  free(v);
  free(ob.data);
  free(vb.data);
  return rc;
}

static int store_put(standalone_t *s, const void *key, size_t key_len, const void *val,
                     size_t val_len, err_t *err) {
  return s->engine->ops->put(s->engine, key, key_len, val, val_len, err);
}

static int store_delete(standalone_t *s, const void *key, size_t key_len, const void *val,
                        size_t val_len, err_t *err) {
  (void)val, (void)val_len;
  return s->engine->ops->del(s->engine, key, key_len, err);
}

/* A write under key's stripe lock: read the old value, then write_entries. */
static int write_locked(standalone_t *s, const void *key, size_t key_len, const void *val,
                        size_t val_len,
                        int (*store)(standalone_t *s, const void *key, size_t key_len,
                                     const void *val, size_t val_len, err_t *err),
                        err_t *err) {
  size_t i = stripe_of(key, key_len);
  pthread_mutex_lock(&s->stripes[i]);
  atomic_fetch_add(&s->writes[i], 1); /* odd: in flight */
  void *old = NULL;
  size_t old_len = 0;
  int rc = read_old(s, key, key_len, &old, &old_len, err);
  if (rc == BFH_OK) {
    rc = write_entries(s, key, key_len, old, old_len, val, val_len, store, err);
    if (rc != BFH_OK) lose_exact(s); /* an entry of either value may be left stale */
  }
  atomic_fetch_add(&s->writes[i], 1);
  pthread_mutex_unlock(&s->stripes[i]);
  free(old);
  return rc;
}

int standalone_put(standalone_t *s, const void *key, size_t key_len, const void *val,
                   size_t val_len, err_t *err) {
  static const uint8_t empty = 0;
  return write_locked(s, key, key_len, val ? val : &empty, val_len, store_put, err);
}

int standalone_delete(standalone_t *s, const void *key, size_t key_len, err_t *err) {
  return write_locked(s, key, key_len, NULL, 0, store_delete, err);
}

void standalone_trust_begin(standalone_t *s, standalone_trust_t *t) {
  t->exact = atomic_load(&s->exact);
  for (int i = 0; i < STANDALONE_STRIPES; i++) t->writes[i] = atomic_load(&s->writes[i]);
}

int standalone_trusts(standalone_t *s, const standalone_trust_t *t, const void *key,
                      size_t key_len) {
  size_t i = stripe_of(key, key_len);
  uint64_t w = t->writes[i];
  return t->exact && w % 2 == 0 && atomic_load(&s->writes[i]) == w && atomic_load(&s->exact);
}

int standalone_is_exact(standalone_t *s) {
  return atomic_load(&s->exact);
}

void standalone_set_step_hook(standalone_t *s, void (*fn)(void *arg, int step), void *arg) {
  s->step_hook = fn;
  s->step_arg = arg;
}

/* ---- Search ------------------------------------------------------------------------------ */

static int items_add(items_t *l, const void *bytes, size_t len) {
  size_t need = l->n + 5 + len;
  if (need > l->cap) {
    size_t cap = l->cap ? l->cap : 256;
    while (cap < need) cap *= 2;
    uint8_t *d = realloc(l->data, cap);
    if (!d) return BFH_E_NOMEM;
    l->data = d;
    l->cap = cap;
  }
  uint8_t *p = encode_varint32(l->data + l->n, (uint32_t)len);
  if (len) memcpy(p, bytes, len);
  l->n = (size_t)(p + len - l->data);
  return BFH_OK;
}

/* The string at *p (advanced past it) of a list ending at end; NULL at its end. */
static const uint8_t *items_next(const uint8_t **p, const uint8_t *end, size_t *len) {
  uint32_t n;
  const uint8_t *q = *p < end ? decode_varint32(*p, end, &n) : NULL;
  if (!q) return NULL;
  *p = q + n;
  *len = n;
  return q;
}

/* Collects the keys of the index entries that start with prefix[0, plen). */
static int seek_keys(standalone_t *s, const uint8_t *prefix, size_t plen, items_t *f,
                     uint64_t *entries, err_t *err) {
  lsm_iter_t *it = lsm_iter_create(s->index);
  int rc = it ? BFH_OK : err_set(err, BFH_E_NOMEM, "stand-alone search: out of memory");
  if (it) lsm_iter_seek(it, prefix, plen);
  for (; rc == BFH_OK && it && lsm_iter_valid(it); lsm_iter_next(it)) {
    size_t klen;
    const uint8_t *k = lsm_iter_key(it, &klen);
    if (klen < plen || memcmp(k, prefix, plen) != 0) break;
    (*entries)++;
    if (items_add(f, k + plen, klen - plen) != BFH_OK)
      rc = err_set(err, BFH_E_NOMEM, "stand-alone search: out of memory");
  }
  if (rc == BFH_OK && it) rc = lsm_iter_status(it, err);
  if (rc != BFH_OK) err_prefix(err, "stand-alone index %s: ", s->dir);
  lsm_iter_destroy(it);
  return rc;
}

uint64_t standalone_value_seed(void) {
  return VALUE_HASH_SEED;
}

int standalone_holds_whole(const standalone_t *s) {
  return s->whole;
}

/* The keys the index holds for the whole value val into *f (items, in the index's key order),
   the index entries read into *entries. */
static int value_key_items(standalone_t *s, const void *val, size_t val_len, const uint64_t *hash,
                           items_t *f, uint64_t *entries, err_t *err) {
  *entries = 0;
  if (!s->whole)
    return err_set(err, BFH_E_INVALID,
                   "stand-alone index %s: it holds the declared attributes' terms, not whole "
                   "values (declare an attribute with the extractor value for that)",
                   s->dir);
  uint8_t *prefix = malloc(prefix_bytes(val_len));
  int rc = prefix ? BFH_OK : err_set(err, BFH_E_NOMEM, "stand-alone search: out of memory");
  if (rc == BFH_OK)
    rc = seek_keys(s, prefix, encode_prefix(prefix, val, val_len, hash), f, entries, err);
  free(prefix);
  return rc;
}

int standalone_value_keys(standalone_t *s, const void *val, size_t val_len, const uint64_t *hash,
                          bfh_match_fn fn, void *arg, uint64_t *entries, err_t *err) {
  items_t f = {NULL, 0, 0};
  uint64_t n = 0;
  int rc = value_key_items(s, val, val_len, hash, &f, &n, err);
  if (entries) *entries = n;
  const uint8_t *p = f.data, *end = f.data + f.n, *key;
  size_t key_len;
  while (rc == BFH_OK && (key = items_next(&p, end, &key_len)))
    if (fn && fn(arg, key, key_len)) break;
  free(f.data);
  return rc;
}

/* Attribute attr of the index: *spec (NULL: the whole value of an index opened without
   attributes). BFH_OK or BFH_E_INVALID. */
static int attr_spec_of(const standalone_t *s, size_t attr, const attr_spec_t **spec, err_t *err) {
  *spec = NULL;
  if (!s->terms && attr == 0) return BFH_OK;
  if (attr >= terms_count(s->terms))
    return err_set(err, BFH_E_INVALID, "stand-alone index %s: no attribute %zu (it holds %zu)",
                   s->dir, attr, terms_count(s->terms));
  *spec = terms_spec(s->terms, attr);
  return BFH_OK;
}

int standalone_lookup_term(standalone_t *s, size_t attr, const void *term, size_t term_len,
                           bfh_match_fn fn, void *arg, uint64_t *entries, err_t *err) {
  const attr_spec_t *spec;
  int rc = attr_spec_of(s, attr, &spec, err);
  if (rc != BFH_OK) return rc;
  items_t pre = {NULL, 0, 0}, f = {NULL, 0, 0};
  term_ctx_t c = {&pre, spec, BFH_OK};
  rc = !spec || spec_is_whole(spec) ? add_whole(&pre, term, term_len)
                                    : (add_term(&c, term, term_len), c.rc);
  if (rc != BFH_OK) rc = err_set(err, rc, "stand-alone search: out of memory");
  const uint8_t *p = pre.data, *end = pre.data + pre.n, *q;
  size_t len;
  uint64_t n = 0;
  if (rc == BFH_OK && (q = items_next(&p, end, &len))) rc = seek_keys(s, q, len, &f, &n, err);
  if (entries) *entries = n;
  p = f.data, end = f.data + f.n;
  while (rc == BFH_OK && (q = items_next(&p, end, &len)))
    if (fn && fn(arg, q, len)) break;
  free(pre.data);
  free(f.data);
  return rc;
}

int standalone_term_whole(const standalone_t *s, size_t attr, size_t term_len) {
  const attr_spec_t *spec;
  err_t err;
  if (attr_spec_of(s, attr, &spec, &err) != BFH_OK) return 0;
  if (!spec || spec_is_whole(spec)) return term_len <= STANDALONE_INLINE_MAX;
  return spec->is_int || term_len < STANDALONE_TERM_MAX;
}

/* ---- Range scans ------------------------------------------------------------------------- */

/* A range's ends as the entries hold terms (encode_term, unclosed), against which each
   entry's term bytes are compared: memcmp order on them is the terms' order. */
typedef struct ends {
  uint8_t *lo, *hi; /* NULL: no such end */
  size_t lo_len, hi_len;
  int lo_open, hi_open, prefix;
} ends_t;

enum { PLACE_OUT, PLACE_IN, PLACE_PAST };

static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  int c = memcmp(a, b, an < bn ? an : bn);
  return c ? c : (an > bn) - (an < bn);
}

/* Where the term whose entry bytes are t[0, n) lies against e: in, out (a later term may be
   in), or past (no later term is). cut: the term may be a longer one's first bytes (a text
   term of STANDALONE_TERM_MAX bytes), which is in wherever its end might be. */
static int place(const ends_t *e, const uint8_t *t, size_t n, int cut) {
  if (e->prefix) {
    if (n >= e->lo_len && memcmp(t, e->lo, e->lo_len) == 0) return PLACE_IN;
    return bytes_cmp(t, n, e->lo, e->lo_len) < 0 ? PLACE_OUT : PLACE_PAST;
  }
  int ch = e->hi ? bytes_cmp(t, n, e->hi, e->hi_len) : -1;
  if (ch > 0 || (ch == 0 && e->hi_open && !cut)) return PLACE_PAST;
  int cl = e->lo ? bytes_cmp(t, n, e->lo, e->lo_len) : 1;
  if (cl < 0 || (cl == 0 && e->lo_open && !cut)) return PLACE_OUT;
  return PLACE_IN;
}

/* e for r over attribute spec (NULL: the whole value, whose entries hold it raw). */
static int ends_init(ends_t *e, const attr_spec_t *spec, const standalone_range_t *r,
                     const char *dir, err_t *err) {
  memset(e, 0, sizeof *e);
  e->lo_open = r->lo_open;
  e->hi_open = r->hi_open;
  e->prefix = r->prefix;
  int is_int = spec && spec->is_int, whole = !spec || spec_is_whole(spec);
  if (is_int && !r->prefix &&
      ((r->lo && r->lo_len != ATTR_INT_TERM_BYTES) || (r->hi && r->hi_len != ATTR_INT_TERM_BYTES)))
    return err_set(err, BFH_E_INVALID,
                   "stand-alone index %s: attribute %s: a range end that is not an :int term", dir,
                   spec->name);
  const void *end[2] = {r->lo, r->prefix ? NULL : r->hi};
  size_t len[2] = {r->lo_len, r->hi_len};
  uint8_t **out[2] = {&e->lo, &e->hi};
  size_t *out_len[2] = {&e->lo_len, &e->hi_len};
  for (int i = 0; i < 2; i++) {
    if (!end[i]) continue;
    /* An :int term is compared on its 8 bytes, after the length byte the entries hold. */
    *out[i] = malloc(whole || is_int ? len[i] + 1 : text_bytes(len[i]));
    if (!*out[i]) return err_set(err, BFH_E_NOMEM, "stand-alone search: out of memory");
    if (whole || is_int) {
      if (len[i]) memcpy(*out[i], end[i], len[i]);
      *out_len[i] = len[i];
    } else {
      *out_len[i] = encode_text(*out[i], end[i], len[i], 0);
    }
  }
  return BFH_OK;
}

static void ends_release(ends_t *e) {
  free(e->lo);
  free(e->hi);
}

/* One range scan: the iterator, the caller's fn, and what was read. */
typedef struct scan {
  lsm_iter_t *it;
  bfh_match_fn fn;
  void *arg;
  uint64_t entries;
  uint64_t inexact; /* keys reported under a term cut or hashed */
  int stopped;      /* fn returned nonzero */
} scan_t;

/* Seeks a[0, an) || b[0, bn). */
static int seek2(scan_t *sc, const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  uint8_t *k = malloc(an + bn + 1);
  if (!k) return BFH_E_NOMEM;
  memcpy(k, a, an);
  if (bn) memcpy(k + an, b, bn);
  lsm_iter_seek(sc->it, k, an + bn);
  free(k);
  return BFH_OK;
}

/* Reports key k[0, n) if its term is in (place PLACE_IN; inexact: the term is cut or
   hashed); 1 when the scan is to stop. */
static int report(scan_t *sc, int where, int inexact, const uint8_t *k, size_t n) {
  if (where != PLACE_IN) return where == PLACE_PAST;
  sc->inexact += inexact != 0;
  if (sc->fn && sc->fn(sc->arg, k, n)) sc->stopped = 1;
  return sc->stopped;
}

int standalone_term_split(const uint8_t *r, size_t n, int is_int, const uint8_t **t, size_t *tn,
                          int *cut, const uint8_t **key, size_t *kn) {
  *cut = 0;
  if (is_int) {
    if (n < 1 + ATTR_INT_TERM_BYTES || r[0] != ATTR_INT_TERM_BYTES) return 0;
    *t = r + 1;
    *tn = ATTR_INT_TERM_BYTES;
    *key = r + 1 + ATTR_INT_TERM_BYTES;
    *kn = n - 1 - ATTR_INT_TERM_BYTES;
    return 1;
  }
  size_t raw = 0;
  for (size_t i = 0; i + 1 < n; i++, raw++) {
    if (r[i] != 0) continue;
    if (r[i + 1] == 0xff) {
      i++;
      continue;
    }
    if (r[i + 1] != 0x01) return 0;
    *t = r;
    *tn = i;
    *cut = raw == STANDALONE_TERM_MAX;
    *key = r + i + 2;
    *kn = n - i - 2;
    return 1;
  }
  return 0;
}

size_t standalone_term_encode(uint8_t *buf, int is_int, const void *t, size_t len, int close) {
  return encode_term(buf, is_int, t, len, close);
}

size_t standalone_term_bytes(size_t len) {
  return term_bytes(len);
}

/* The scan of a tagged attribute: one seek to its start and r's lower end (or prefix), then
   its entries in term order until one is past the range. */
static int scan_tagged(standalone_t *s, const attr_spec_t *spec, const ends_t *e, scan_t *sc,
                       err_t *err) {
  uint8_t *a = malloc(2 + 5 + strlen(spec->name) + 1);
  if (!a) return err_set(err, BFH_E_NOMEM, "stand-alone search: out of memory");
  size_t an = encode_attr(a, spec->name);
  int rc = BFH_OK;
  if (!e->lo) {
    lsm_iter_seek(sc->it, a, an);
  } else if (spec->is_int) { /* the length byte, then the end's (at most 8) bytes */
    uint8_t b[1 + ATTR_INT_TERM_BYTES] = {ATTR_INT_TERM_BYTES};
    size_t n = e->lo_len < ATTR_INT_TERM_BYTES ? e->lo_len : ATTR_INT_TERM_BYTES;
    memcpy(b + 1, e->lo, n);
    rc = seek2(sc, a, an, b, 1 + n);
  } else {
    rc = seek2(sc, a, an, e->lo, e->lo_len);
  }
  if (rc != BFH_OK) rc = err_set(err, rc, "stand-alone search: out of memory");
  for (; rc == BFH_OK && lsm_iter_valid(sc->it); lsm_iter_next(sc->it)) {
    size_t kn;
    const uint8_t *k = lsm_iter_key(sc->it, &kn), *t, *key;
    if (kn < an || memcmp(k, a, an) != 0) break;
    size_t tn, keyn;
    int cut;
    if (!standalone_term_split(k + an, kn - an, spec->is_int, &t, &tn, &cut, &key, &keyn))
      rc = err_set(err, BFH_E_CORRUPT,
                   "stand-alone index %s: an entry of attribute %s does "
                   "not decode",
                   s->dir, spec->name);
    else if (sc->entries++, report(sc, place(e, t, tn, cut), cut, key, keyn))
      break;
  }
  free(a);
  return rc;
}

/* The scan of the whole value's entries, varint32(len v) || v || k: in order within one
   length only, so two seeks per length held (the varints are prefix-free: the entries of one
   length are contiguous, and its varint with the last byte raised is where the next starts),
   then that length's entries in order until one is past the range. A value held by its
   hash is in whatever the range. */
static int scan_whole(standalone_t *s, const ends_t *e, scan_t *sc, err_t *err) {
  static const uint8_t past_tagged[2] = {STANDALONE_TAG_0, STANDALONE_TAG_1 + 1};
  int rc = BFH_OK;
  lsm_iter_seek_first(sc->it);
  while (rc == BFH_OK && !sc->stopped && lsm_iter_valid(sc->it)) {
    size_t kn;
    const uint8_t *k = lsm_iter_key(sc->it, &kn);
    if (kn >= 2 && k[0] == STANDALONE_TAG_0 && k[1] == STANDALONE_TAG_1) {
      lsm_iter_seek(sc->it, past_tagged, sizeof past_tagged); /* the attributes' entries */
      continue;
    }
    uint32_t len;
    const uint8_t *q = decode_varint32(k, k + kn, &len);
    if (!q) {
      rc = err_set(err, BFH_E_CORRUPT, "stand-alone index %s: an entry does not decode", s->dir);
      break;
    }
    uint8_t hdr[5];
    size_t h = (size_t)(q - k);
    memcpy(hdr, k, h);
    int inline_v = len <= STANDALONE_INLINE_MAX;
    int skip = inline_v && e->prefix && len < e->lo_len; /* too short to hold the prefix */
    if (!skip && inline_v && e->lo && seek2(sc, hdr, h, e->lo, e->lo_len) != BFH_OK)
      rc = err_set(err, BFH_E_NOMEM, "stand-alone search: out of memory");
    for (; !skip && rc == BFH_OK && lsm_iter_valid(sc->it); lsm_iter_next(sc->it)) {
      k = lsm_iter_key(sc->it, &kn);
      if (kn < h || memcmp(k, hdr, h) != 0) break;
      size_t tn = inline_v ? len : 8;
      if (kn - h < tn) {
        rc = err_set(err, BFH_E_CORRUPT, "stand-alone index %s: an entry does not decode", s->dir);
        break;
      }
      sc->entries++;
      int where = inline_v ? place(e, k + h, tn, 0) : PLACE_IN;
      if (report(sc, where, !inline_v, k + h + tn, kn - h - tn)) break;
    }
    hdr[h - 1]++; /* the next length's entries */
    if (rc == BFH_OK && !sc->stopped) lsm_iter_seek(sc->it, hdr, h);
  }
  return rc;
}

int standalone_scan_range(standalone_t *s, size_t attr, const standalone_range_t *r,
                          bfh_match_fn fn, void *arg, uint64_t *entries, uint64_t *inexact,
                          err_t *err) {
  if (entries) *entries = 0;
  if (inexact) *inexact = 0;
  const attr_spec_t *spec;
  int rc = attr_spec_of(s, attr, &spec, err);
  if (rc != BFH_OK) return rc;
  ends_t e;
  rc = ends_init(&e, spec, r, s->dir, err);
  scan_t sc = {lsm_iter_create(s->index), fn, arg, 0, 0, 0};
  if (rc == BFH_OK && !sc.it) rc = err_set(err, BFH_E_NOMEM, "stand-alone search: out of memory");
  if (rc == BFH_OK)
    rc = !spec || spec_is_whole(spec) ? scan_whole(s, &e, &sc, err)
                                      : scan_tagged(s, spec, &e, &sc, err);
  if (rc == BFH_OK && (rc = lsm_iter_status(sc.it, err)) != BFH_OK)
    err_prefix(err, "stand-alone index %s: ", s->dir);
  lsm_iter_destroy(sc.it);
  ends_release(&e);
  if (entries) *entries = sc.entries;
  if (inexact) *inexact = sc.inexact;
  return rc;
}

/* A seek costs about one data block per sorted run: each L0 table, each deeper level that
   has tables, and the memtables. Measured on the 2-core test machine, release build, 1M
   unique values, warm cache: 7 runs, 7.0-9.6 us per present value (the seek and one get)
   and 1.7 us per absent one; 1.5 us per run puts AUTO's estimate at 10.5 us, in the units
   of the planner's cost model (search_plan.c), where a present value by blocks measured 7.4 us. */
#define COST_SEEK_RUN_NS 1500.0

double standalone_cost_ns(standalone_t *s) {
  lsm_stats_t ls;
  lsm_get_stats(s->index, &ls);
  double runs = 2 + ls.files_per_level[0];
  for (int l = 1; l < 7; l++) runs += ls.files_per_level[l] > 0;
  return runs * COST_SEEK_RUN_NS;
}

void standalone_note_validation(standalone_t *s, uint64_t candidates, uint64_t ns) {
  if (candidates < STANDALONE_COST_MIN_SAMPLE) return;
  uint64_t x = ns * 16 / candidates;
  if (x == 0) x = 1;
  /* Two searches may note at once: one of their updates is kept, which a mean over many
     can afford. */
  uint64_t old = atomic_load_explicit(&s->candidate_ns16, memory_order_relaxed);
  uint64_t mean = old == 0 ? x : old - old / 8 + x / 8;
  atomic_store_explicit(&s->candidate_ns16, mean ? mean : 1, memory_order_relaxed);
}

double standalone_candidate_ns(standalone_t *s) {
  return (double)atomic_load_explicit(&s->candidate_ns16, memory_order_relaxed) / 16.0;
}

void standalone_get_stats(standalone_t *s, standalone_stats_t *st) {
  memset(st, 0, sizeof *st);
  lsm_stats_t ls;
  lsm_get_stats(s->index, &ls);
  for (int l = 0; l < 7; l++) {
    st->tables += ls.files_per_level[l];
    st->bytes += ls.bytes_per_level[l];
  }
  st->bytes_written = ls.bytes_written;
  st->entries_put = atomic_load(&s->entries_put);
  st->old_reads = atomic_load(&s->old_reads);
  st->old_read_ns = atomic_load(&s->old_read_ns);
  st->replayed_indexed = s->replayed_indexed;
  st->built_entries = s->built_entries;
}

/* ---- Open, build and close ------------------------------------------------------------- */

static char *join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", a, b);
  return p;
}

int standalone_wait_idle(standalone_t *s, err_t *err) {
  return lsm_wait_idle(s->index, err);
}

int standalone_exists(const char *path) {
  char *dir = join(path, STANDALONE_DIR);
  int yes = dir && env_exists(env_default(), dir);
  free(dir);
  return yes;
}

/* engine_replay_fn: remembers every put the database's open replays from its logs. */
static int remember_replayed(void *arg, const void *key, size_t key_len, const void *val,
                             size_t val_len, int is_value) {
  items_t *r = arg;
  if (!is_value) return 0;
  return items_add(r, key, key_len) != BFH_OK || items_add(r, val, val_len) != BFH_OK;
}

/* Indexes again every replayed put that is still the key's value: the index may have lost
   it in a machine crash that the database's log survived. Puts of an entry the index
   has are no-ops for the search. */
static int index_replayed(standalone_t *s, const items_t *r, err_t *err) {
  const uint8_t *p = r->data, *end = r->data + r->n, *key, *val;
  size_t key_len, val_len;
  int rc = BFH_OK;
  while (rc == BFH_OK && (key = items_next(&p, end, &key_len)) &&
         (val = items_next(&p, end, &val_len))) {
    int holds = engine_key_holds(s->engine, NULL, key, key_len, val, val_len, err);
    if (holds < 0) rc = holds;
    if (holds <= 0) continue;
    rc = index_put(s, key, key_len, val, val_len, err);
    s->replayed_indexed++;
  }
  return rc;
}

/* Removes the directory dir and the files in it (a store's files: no subdirectories). */
static int remove_dir(env_t *io, const char *dir, err_t *err) {
  char **names = NULL;
  size_t n = 0;
  int rc = env_list_dir(io, dir, &names, &n, err);
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    char *p = join(dir, names[i]);
    rc = p ? env_unlink(io, p, err) : err_set(err, BFH_E_NOMEM, "out of memory");
    if (rc == BFH_NOT_FOUND) rc = BFH_OK;
    free(p);
  }
  env_names_free(names, n);
  if (rc == BFH_OK && rmdir(dir) != 0)
    rc = err_set(err, BFH_E_IO, "%s: cannot remove the directory", dir);
  return rc;
}

int standalone_drop(const char *path, err_t *err) {
  char *dir = join(path, STANDALONE_DIR);
  if (!dir) return err_set(err, BFH_E_NOMEM, "out of memory");
  env_t *io = env_default();
  int rc = env_exists(io, dir) ? remove_dir(io, dir, err) : BFH_OK;
  if (rc == BFH_OK) rc = env_sync_dir(io, path, err);
  free(dir);
  return rc;
}

static void index_options(const bfh_options *opt, env_t *io, lsm_options_t *lo) {
  lsm_options_init(lo);
  lo->create_if_missing = 1;
  lo->memtable_bytes = opt->memtable_bytes;
  lo->table_bytes = opt->table_bytes;
  lo->key_bits_per_key = opt->key_bits_per_key;
  lo->sync = opt->sync;
  lo->io = io;
  /* The index is read by seeks, which the block cache does not serve (it keeps the blocks of
     gets): a cache would be a cost with no use. */
  lo->block_cache_bytes = 0;
}

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The attributes the index holds, as its ATTRIBUTES record says them: FORMAT_LINE if it holds
   tagged entries, WHOLE_VALUE_LINE if it holds whole values, then each other attribute's
   canonical declaration on a line, sorted.
   malloc'd (the caller frees it); NULL on no memory. */
static char *attrs_signature(const standalone_t *s) {
  size_t n = terms_count(s->terms), len = sizeof FORMAT_LINE + sizeof WHOLE_VALUE_LINE, used = 0;
  char **lines = calloc(n + 1, sizeof *lines);
  int ok = lines != NULL;
  for (size_t i = 0; ok && i < n; i++) {
    const attr_spec_t *spec = terms_spec(s->terms, i);
    if (spec_is_whole(spec)) continue;
    char buf[ATTR_MAX_DECL_BYTES + 2];
    size_t m = attr_spec_format(spec, buf, sizeof buf - 1);
    ok = m < sizeof buf - 1 && (lines[used] = malloc(m + 2));
    if (ok) {
      buf[m] = '\n';
      memcpy(lines[used++], buf, m + 1);
      lines[used - 1][m + 1] = '\0';
    }
    len += m + 1;
  }
  char *out = ok ? malloc(len) : NULL;
  if (out) {
    if (used > 1) qsort(lines, used, sizeof *lines, str_cmp);
    snprintf(out, len, "%s%s", used ? FORMAT_LINE : "", s->whole ? WHOLE_VALUE_LINE : "");
    for (size_t i = 0; i < used; i++) strcat(out, lines[i]);
  }
  for (size_t i = 0; lines && i < used; i++) free(lines[i]);
  free(lines);
  return out;
}

/* Writes dir/ATTRIBUTES, unless the index holds the whole value alone: its directory is then
   what it was before attributes existed. */
static int write_attrs_record(standalone_t *s, const char *dir, err_t *err) {
  char *sig = attrs_signature(s);
  if (!sig) return err_set(err, BFH_E_NOMEM, "out of memory");
  int rc = BFH_OK;
  if (strcmp(sig, WHOLE_VALUE_LINE) != 0) {
    char *p = join(dir, ATTRS_RECORD);
    rc = p ? env_write_file(s->io, p, sig, strlen(sig), err)
           : err_set(err, BFH_E_NOMEM, "out of memory");
    free(p);
  }
  free(sig);
  return rc;
}

/* Does the index in s->dir hold the attributes s->terms declares (its ATTRIBUTES record,
   none meaning the whole value alone)? 1, 0, or a negative status. */
static int attrs_record_matches(standalone_t *s, err_t *err) {
  char *p = join(s->dir, ATTRS_RECORD), *sig = attrs_signature(s);
  void *data = NULL;
  size_t size = 0;
  int rc = p && sig ? BFH_OK : err_set(err, BFH_E_NOMEM, "out of memory");
  if (rc == BFH_OK && env_exists(s->io, p))
    rc = env_read_file(s->io, p, &data, &size, err);
  else if (rc == BFH_OK)
    size = strlen(WHOLE_VALUE_LINE);
  const char *have = data ? (const char *)data : WHOLE_VALUE_LINE;
  if (rc == BFH_OK) rc = size == strlen(sig) && memcmp(have, sig, size) == 0;
  free(data);
  free(p);
  free(sig);
  return rc;
}

/* Builds the index of every live entry of the database into path/bfh-standalone.tmp, then
   renames it into place. */
static int build(standalone_t *s, const char *path, const bfh_options *opt, err_t *err) {
  char *tmp = join(path, STANDALONE_DIR ".tmp");
  if (!tmp) return err_set(err, BFH_E_NOMEM, "out of memory");
  int rc = BFH_OK;
  if (env_exists(s->io, tmp)) rc = remove_dir(s->io, tmp, err); /* an interrupted build */
  lsm_options_t lo;
  index_options(opt, s->io, &lo);
  if (rc == BFH_OK) rc = lsm_open(tmp, &lo, &s->index, err);
  if (rc == BFH_OK) rc = write_attrs_record(s, tmp, err);
  engine_iter_t *it = NULL;
  if (rc == BFH_OK) rc = s->engine->ops->iter_create(s->engine, &it, err);
  if (it) it->ops->seek_first(it);
  for (; rc == BFH_OK && it->ops->valid(it); it->ops->next(it)) {
    size_t klen, vlen;
    const void *k = it->ops->key(it, &klen);
    const void *v = it->ops->value(it, &vlen);
    rc = index_put(s, k, klen, v, vlen, err);
    s->built_entries++;
  }
  if (rc == BFH_OK && it) rc = it->ops->status(it, err);
  if (it) it->ops->destroy(it);
  if (s->index) {
    int rc2 = lsm_close(s->index); /* syncs its log: the build is durable */
    s->index = NULL;
    if (rc == BFH_OK && rc2 != BFH_OK) rc = err_set(err, rc2, "closing the built index failed");
  }
  /* Built from the database alone, the index holds no stale entry. */
  char *exact = rc == BFH_OK ? join(tmp, EXACT_MARKER) : NULL;
  if (rc == BFH_OK) rc = exact ? env_write_file(s->io, exact, "", 0, err) : BFH_E_NOMEM;
  free(exact);
  if (rc == BFH_OK) rc = env_rename(s->io, tmp, s->dir, err);
  if (rc == BFH_OK) rc = env_sync_dir(s->io, path, err);
  if (rc != BFH_OK) err_prefix(err, "building the stand-alone index %s: ", tmp);
  free(tmp);
  return rc;
}

static standalone_t *standalone_new(const engine_kind_t *kind, const char *path, env_t *io,
                                    const terms_t *terms) {
  standalone_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->kind = kind;
  s->terms = terms;
  s->whole = terms == NULL;
  for (size_t i = 0; i < terms_count(terms); i++) s->whole |= spec_is_whole(terms_spec(terms, i));
  if (!(s->dir = join(path, STANDALONE_DIR)) || !(s->path = strdup(path))) {
    free(s->dir);
    free(s);
    return NULL;
  }
  s->io = io ? io : env_default();
  for (int i = 0; i < STANDALONE_STRIPES; i++) pthread_mutex_init(&s->stripes[i], NULL);
  return s;
}

static void standalone_free(standalone_t *s) {
  for (int i = 0; i < STANDALONE_STRIPES; i++) pthread_mutex_destroy(&s->stripes[i]);
  free(s->dir);
  free(s->path);
  free(s);
}

/* Opens the existing index, noting that it is open (the clean marker goes), and re-indexes
   the replayed puts unless the last close was clean (or built: this open built it): then
   every write had reached both. It is exact if it was so at that clean close or build; after
   an unclean close, a write in flight may have left a stale entry, so the exact marker goes
   before anything is written. */
static int open_index(standalone_t *s, const bfh_options *opt, const items_t *r, int built,
                      err_t *err) {
  char *marker = join(s->dir, CLEAN_MARKER), *exact = join(s->dir, EXACT_MARKER);
  int rc = marker && exact ? BFH_OK : err_set(err, BFH_E_NOMEM, "out of memory");
  lsm_options_t lo;
  index_options(opt, s->io, &lo);
  lo.create_if_missing = 0;
  if (rc == BFH_OK) rc = lsm_open(s->dir, &lo, &s->index, err);
  int had_marker = rc == BFH_OK && env_exists(s->io, marker);
  int clean = had_marker || (rc == BFH_OK && built);
  int was_exact = rc == BFH_OK && env_exists(s->io, exact);
  if (had_marker) {
    rc = env_unlink(s->io, marker, err);
    if (rc == BFH_OK) rc = env_sync_dir(s->io, s->dir, err);
  }
  if (rc == BFH_OK && !clean) rc = drop_exact_marker(s, err);
  if (rc == BFH_OK && !clean) rc = index_replayed(s, r, err);
  if (rc == BFH_OK) atomic_store(&s->exact, clean && was_exact);
  if (rc != BFH_OK) err_prefix(err, "stand-alone index %s: ", s->dir);
  free(marker);
  free(exact);
  return rc;
}

/* The database's identity at rest (engine_kind_t.at_rest) into *id, "" for a database not
   yet created. */
static int database_at_rest(standalone_t *s, char **id, err_t *err) {
  *id = NULL;
  if (!env_exists(s->io, s->path))
    return (*id = strdup("")) ? BFH_OK : err_set(err, BFH_E_NOMEM, "out of memory");
  return s->kind->at_rest(s->path, s->io, id, err);
}

/* Was the index closed cleanly with the database as `rest` says it is now (its clean marker
   holds that identity)? 1, 0, or a negative status. With replayed (the engine's open replays
   its logs into the index), an unclean close counts as 1 too: the replay mends it. */
static int closed_with(standalone_t *s, const char *rest, int replayed, err_t *err) {
  char *marker = join(s->dir, CLEAN_MARKER);
  void *data = NULL;
  size_t size = 0;
  if (!marker) return err_set(err, BFH_E_NOMEM, "out of memory");
  int rc = BFH_OK, had = env_exists(s->io, marker);
  if (had) rc = env_read_file(s->io, marker, &data, &size, err);
  if (rc == BFH_OK && !had)
    rc = replayed;
  else if (rc == BFH_OK)
    rc = size == strlen(rest) && (size == 0 || memcmp(data, rest, size) == 0);
  free(data);
  free(marker);
  return rc;
}

int standalone_open(const engine_kind_t *kind, const char *path, const bfh_options *opt,
                    const struct terms *terms, struct env *io, index_sync_t *sync, engine_t **e,
                    standalone_t **out, err_t *err) {
  *out = NULL;
  *e = NULL;
  standalone_t *s = standalone_new(kind, path, io, terms);
  if (!s) return err_set(err, BFH_E_NOMEM, "%s: out of memory", path);
  items_t r = {NULL, 0, 0}, none = {NULL, 0, 0};
  char *rest = NULL; /* at_rest: the database as this open found it */
  int built = 0;
  int rc = BFH_OK;
  if (!(kind->caps & ENGINE_CAP_STANDALONE) || !kind->open || !kind->at_rest)
    rc = err_set(err, BFH_E_UNSUPPORTED, "%s: the %s engine cannot keep a stand-alone index", path,
                 kind->name);
  if (rc == BFH_OK) rc = database_at_rest(s, &rest, err);
  if (rc == BFH_OK && kind->open_replaying)
    rc = kind->open_replaying(path, opt, io, sync, remember_replayed, &r, e, err);
  else if (rc == BFH_OK)
    rc = kind->open(path, opt, io, sync, e, err);
  if (rc == BFH_OK) {
    s->engine = *e;
    /* An index built for other attributes (declared or dropped since) is built again. */
    int same = env_exists(s->io, s->dir) ? attrs_record_matches(s, err) : 1;
    /* So is one whose last clean close left the database otherwise than it is now: another
       program wrote it since, or its files were put back from a copy. Without a replay, so is
       one after any other close: a crash may have kept writes the index lost. */
    if (same == 1 && env_exists(s->io, s->dir))
      same = closed_with(s, rest, kind->open_replaying != NULL, err);
    if (same < 0) rc = same;
    if (same == 0) rc = remove_dir(s->io, s->dir, err);
    if (same == 0 && rc == BFH_OK) rc = env_sync_dir(s->io, path, err);
    if (rc == BFH_OK && !env_exists(s->io, s->dir)) {
      rc = build(s, path, opt, err);
      built = 1;
    }
  }
  /* A build read the database after its replay: nothing replayed is missing from it. */
  if (rc == BFH_OK) rc = open_index(s, opt, built ? &none : &r, built, err);
  free(r.data);
  free(rest);
  if (rc != BFH_OK) {
    if (s->index) (void)lsm_close(s->index);
    if (*e) (*e)->ops->close(*e, NULL);
    *e = NULL;
    standalone_free(s);
    return rc;
  }
  *out = s;
  return BFH_OK;
}

int standalone_close(standalone_t *s) {
  if (!s) return BFH_OK;
  int rc = lsm_close(s->index);
  err_t err;
  char *rest = NULL;
  /* The marker holds the database as the close left it: the next open trusts the index
     only if the database is still so. */
  if (rc == BFH_OK) rc = s->kind->at_rest(s->path, s->io, &rest, &err);
  /* An index that lost its exactness while open keeps no exact marker past a clean close
     (lose_exact's removal may have failed). */
  if (rc == BFH_OK && !atomic_load(&s->exact)) rc = drop_exact_marker(s, &err);
  if (rc == BFH_OK) {
    /* Every write reached both stores (the engine closed first): the next open need not
       re-index its replayed logs. */
    char *marker = join(s->dir, CLEAN_MARKER);
    rc = marker ? env_write_file(s->io, marker, rest, strlen(rest), &err) : BFH_E_NOMEM;
    free(marker);
  }
  free(rest);
  standalone_free(s);
  return rc;
}
