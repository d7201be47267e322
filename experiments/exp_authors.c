/* The authors' cost profile; see exp_authors.h. Built with -O0 (CMakeLists.txt): its small
 * helpers stand for the C++ library calls the authors' unoptimised build makes (a string
 * copy, a bitset element reference and its assignment), each a real call. */
#include "experiments/exp_authors.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "experiments/exp.h"
#include "filters/bits.h"
#include "filters/hash.h"
#include "filters/value_filter.h"
#include "hierarchy/hierarchy.h"
#include "lsm/filename.h"
#include "lsm/internal_key.h"
#include "util/env.h"
#include "lsm/table.h"
#include "util/vec.h"

struct exp_authors {
  char dir[1024], leaf_dir[1100];
  uint64_t m, seed;
  uint32_t k;
  size_t n;
  uint64_t *numbers; /* the table files found, ascending */
  hierarchy_t *hier;
  bfh_search_stats *st; /* the search under way: the leaf source counts into it */
};

/* ---- strings, as the C++ library holds them ------------------------------------------- */

/* What the authors' unoptimised build does for each entry of a table it scans is a chain of
   small calls: their own code and the C++ templates it instantiates (std::vector<DBRecord>,
   its iterators, DBRecord's constructors, leveldb::Slice) are compiled at -O0 with the
   program, so each is a real call; the std::string operations they call (construct, copy,
   substr, find, compare) are the C++ library's, compiled optimised, one call each. The code
   below has the same shape: one function per -O0 layer, and astr_* for the library's string
   operations (a malloc for strings longer than 15 bytes, as the library's short-string
   buffer holds up to 15). */

/* Up to 15 bytes inline, longer ones on the heap. Never copied as a struct. */
typedef struct astr {
  char *p;
  size_t len;
  char inline_buf[16];
} astr_t;

static void astr_assign(astr_t *s, const char *src, size_t n) {
  s->p = n < sizeof s->inline_buf ? s->inline_buf : malloc(n + 1);
  if (!s->p) abort(); /* as std::bad_alloc would end the authors' program */
  if (n) memcpy(s->p, src, n);
  s->p[n] = '\0';
  s->len = n;
}

static void astr_release(astr_t *s) {
  if (s->p != s->inline_buf) free(s->p);
  s->p = NULL;
}

static void astr_copy(astr_t *dst, const astr_t *src) { astr_assign(dst, src->p, src->len); }

static void astr_substr(astr_t *dst, const astr_t *s, size_t pos, size_t n) {
  if (pos > s->len) pos = s->len;
  if (n > s->len - pos) n = s->len - pos;
  astr_assign(dst, s->p + pos, n);
}

static size_t astr_find(const astr_t *s, char c) {
  const char *q = memchr(s->p, c, s->len);
  return q ? (size_t)(q - s->p) : (size_t)-1;
}

static const char *astr_data(const astr_t *s) { return s->p; }
static size_t astr_size(const astr_t *s) { return s->len; }

/* operator== of two strings: an -O0 template (sizes compared, then the bytes). */
static int traits_compare(const char *x, const char *y, size_t n) {
  return n ? memcmp(x, y, n) : 0;
}
static int astr_equals(const astr_t *s, const astr_t *t) {
  return astr_size(s) == astr_size(t) && !traits_compare(astr_data(s), astr_data(t), astr_size(s));
}

/* A growing text buffer (the dump's line, LevelDB's std::string r). */
typedef struct line {
  char *p;
  size_t len, cap;
} line_t;

static void line_put(line_t *l, const char *s, size_t n) {
  if (l->len + n + 1 > l->cap) {
    size_t cap = l->cap ? l->cap : 64;
    while (cap < l->len + n + 1) cap *= 2;
    char *p = realloc(l->p, cap);
    if (!p) abort();
    l->p = p;
    l->cap = cap;
  }
  memcpy(l->p + l->len, s, n);
  l->len += n;
  l->p[l->len] = '\0';
}

/* Printable bytes as they are, the others as \xHH (LevelDB's escaping in its dump). LevelDB
   is optimised: a run of printable bytes is appended at once. */
static void line_put_escaped(line_t *l, const uint8_t *s, size_t n) {
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] >= ' ' && s[i] <= '~') continue;
    line_put(l, (const char *)s + run, i - run);
    char hex[8];
    int w = snprintf(hex, sizeof hex, "\\x%02x", s[i]);
    line_put(l, hex, (size_t)w);
    run = i + 1;
  }
  line_put(l, (const char *)s + run, n - run);
}

static void line_put_number(line_t *l, uint64_t v) {
  char num[24];
  int w = snprintf(num, sizeof num, "%llu", (unsigned long long)v);
  line_put(l, num, (size_t)w);
}

/* ---- a table read as the authors' dump reads it ---------------------------------------- */

/* leveldb::Slice: a pointer and a size, built and read through -O0 calls. */
typedef struct slice {
  const char *data;
  size_t size;
} slice_t;

static slice_t slice_of(const astr_t *s) {
  slice_t r;
  r.data = astr_data(s);
  r.size = astr_size(s);
  return r;
}

/* The allocator a string is constructed with: a temporary, built and destroyed around the
   construction (two calls at -O0). */
typedef struct alloc_tmp {
  char unused;
} alloc_tmp_t;

static void alloc_tmp_init(alloc_tmp_t *a) { a->unused = 0; }
static void alloc_tmp_release(alloc_tmp_t *a) { (void)a; }

/* A string constructed from a pointer and a length (Slice::ToString): the library's
   constructor calls its range constructor, a member template, which the authors' program
   instantiates itself, at -O0, and which the library's calls then reach too. Its layers: the
   range's length (std::distance, its iterator category, __distance), a guard object built and
   destroyed around the copy, the heap buffer when longer than 15 bytes, the copy, the length
   and the terminating zero set. */
typedef struct range_guard {
  astr_t *s;
} range_guard_t;

static int iterator_category(const char *p) {
  (void)p;
  return 0;
}
static size_t distance_impl(const char *first, const char *last, int category) {
  (void)category;
  return (size_t)(last - first);
}
static size_t distance(const char *first, const char *last) {
  return distance_impl(first, last, iterator_category(first));
}
static void range_guard_init(range_guard_t *g, astr_t *s) { g->s = s; }
static void range_guard_release(range_guard_t *g) {
  if (g->s) astr_release(g->s);
}

static void astr_construct_range(astr_t *out, const char *first, const char *last) {
  size_t n = distance(first, last);
  range_guard_t g;
  range_guard_init(&g, out);
  astr_assign(out, first, n);
  g.s = NULL; /* built: the guard lets go */
  range_guard_release(&g);
}

static void slice_to_string(const slice_t *s, astr_t *out) {
  alloc_tmp_t al;
  alloc_tmp_init(&al);
  astr_construct_range(out, s->data, s->data + s->size);
  alloc_tmp_release(&al);
}

/* A record: the key and value strings, a slice over each, and a virtual destructor (a table
   of functions: every destruction of a record in a container goes through it). */
typedef struct record record_t;
typedef struct record_vtbl {
  void (*destroy)(record_t *r);
} record_vtbl_t;

struct record {
  const record_vtbl_t *vptr;
  astr_t key_data, val_data;
  slice_t key, val;
};

static void record_destroy(record_t *r) {
  astr_release(&r->val_data);
  astr_release(&r->key_data);
}

static const record_vtbl_t record_vtbl = {record_destroy};

/* From two strings: both copied, a slice over each. */
static void record_init_strings(record_t *r, const astr_t *key, const astr_t *val) {
  r->vptr = &record_vtbl;
  astr_copy(&r->key_data, key);
  astr_copy(&r->val_data, val);
  r->key = slice_of(&r->key_data);
  r->val = slice_of(&r->val_data);
}

/* From two slices: each turned into a string. */
static void record_init_slices(record_t *r, const slice_t *key, const slice_t *val) {
  r->vptr = &record_vtbl;
  slice_to_string(key, &r->key_data);
  slice_to_string(val, &r->val_data);
  r->key = slice_of(&r->key_data);
  r->val = slice_of(&r->val_data);
}

static slice_t record_get_key(const record_t *r) { return r->key; }
static slice_t record_get_val(const record_t *r) { return r->val; }

/* The copy constructor, which is also the move constructor (the record has no cheaper move). */
static void record_init_copy(record_t *dst, const record_t *src) {
  slice_t k = record_get_key(src), v = record_get_val(src);
  record_init_slices(dst, &k, &v);
}

static void record_destroy_virtual(record_t *r) { r->vptr->destroy(r); }

/* A vector of records: begin, end, end of storage. */
typedef struct records {
  record_t *begin, *finish, *end_of_storage;
} records_t;

/* Its iterator, each step a call. */
typedef struct rec_iter {
  record_t *p;
} rec_iter_t;

static rec_iter_t records_iter_begin(const records_t *rs) { return (rec_iter_t){rs->begin}; }
static rec_iter_t records_iter_end(const records_t *rs) { return (rec_iter_t){rs->finish}; }
static record_t *const *rec_iter_base(const rec_iter_t *it) { return &it->p; }
static int rec_iter_neq(const rec_iter_t *x, const rec_iter_t *y) {
  return *rec_iter_base(x) != *rec_iter_base(y);
}
static record_t *rec_iter_deref(const rec_iter_t *it) { return it->p; }
static void rec_iter_next(rec_iter_t *it) { it->p++; }

static size_t records_size(const records_t *rs) { return (size_t)(rs->finish - rs->begin); }

static record_t *records_allocate(size_t n) {
  record_t *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) abort();
  return v;
}

/* The layers every construction and destruction in the vector goes through at -O0: the
   argument forwarded, the allocator's traits, the allocator, the object's address taken. */
static const record_t *record_forward(const record_t *x) { return x; }
static record_t *record_addressof(record_t *x) { return x; }
static void allocator_construct(record_t *at, const record_t *from) { record_init_copy(at, from); }
static void alloc_traits_construct(record_t *at, const record_t *from) {
  allocator_construct(at, record_forward(from));
}
static void records_construct(record_t *at, const record_t *from) {
  alloc_traits_construct(record_addressof(at), record_forward(from));
}
static void record_destroy_at(record_t *r) { record_destroy_virtual(r); }

static void records_destroy_range(record_t *first, record_t *last) {
  for (; first != last; first++) record_destroy_at(record_addressof(first));
}

static size_t records_check_len(const records_t *rs) {
  size_t n = records_size(rs);
  return n ? 2 * n : 1;
}

/* The slow path of push_back: twice the storage, the new record constructed in it, every
   old record moved over (a copy) and destroyed. */
static void records_realloc_insert(records_t *rs, const record_t *x) {
  size_t len = records_check_len(rs), n = records_size(rs);
  record_t *v = records_allocate(len);
  records_construct(&v[n], x);
  rec_iter_t from = records_iter_begin(rs), to = records_iter_end(rs);
  for (record_t *at = v; rec_iter_neq(&from, &to); rec_iter_next(&from), at++)
    records_construct(at, rec_iter_deref(&from));
  records_destroy_range(rs->begin, rs->finish);
  free(rs->begin);
  rs->begin = v;
  rs->finish = v + n + 1;
  rs->end_of_storage = v + len;
}

static record_t *records_back(records_t *rs) { return rs->finish - 1; }

static record_t *records_emplace_back(records_t *rs, const record_t *x) {
  if (rs->finish != rs->end_of_storage) {
    records_construct(rs->finish, x);
    rs->finish++;
  } else {
    records_realloc_insert(rs, x);
  }
  return records_back(rs);
}

static void records_push_back(records_t *rs, const record_t *x) {
  records_emplace_back(rs, record_forward(x));
}

/* A copy of the vector: storage of its exact size, every record copy-constructed. */
static void records_init_copy(records_t *dst, const records_t *src) {
  size_t n = records_size(src);
  dst->begin = records_allocate(n);
  rec_iter_t from = records_iter_begin(src), to = records_iter_end(src);
  for (record_t *at = dst->begin; rec_iter_neq(&from, &to); rec_iter_next(&from), at++)
    records_construct(at, rec_iter_deref(&from));
  dst->finish = dst->begin + n;
  dst->end_of_storage = dst->finish;
}

static void records_release(records_t *rs) {
  records_destroy_range(rs->begin, rs->finish);
  free(rs->begin);
  memset(rs, 0, sizeof *rs);
}

/* The dump's receiving end, called through a table of functions (a virtual Append): the line
   is copied into a string, its quotes found in copies of the rest of the line, the key and the
   value cut out, and a record built from them is pushed (copied) into the table's vector. */
typedef struct dump dump_t;
typedef struct sink_vtbl {
  int (*append)(dump_t *d, const slice_t *data);
} sink_vtbl_t;

struct dump {
  const sink_vtbl_t *vptr;
  line_t line;
  records_t recs;
};

static int dump_append(dump_t *d, const slice_t *data) {
  astr_t line, rest, key, val;
  slice_to_string(data, &line);
  size_t key_first = astr_find(&line, '\'') + 1;
  astr_substr(&rest, &line, key_first, (size_t)-1);
  size_t key_last = astr_find(&rest, '\'') - 1 + key_first;
  astr_release(&rest);
  astr_substr(&key, &line, key_first, key_last - key_first + 1);
  astr_substr(&rest, &line, key_last + 2, (size_t)-1);
  size_t val_first = astr_find(&rest, '\'') + 1 + key_last + 2;
  astr_release(&rest);
  astr_substr(&rest, &line, val_first, (size_t)-1);
  size_t val_last = astr_find(&rest, '\'') - 1 + val_first;
  astr_release(&rest);
  astr_substr(&val, &line, val_first, val_last - val_first + 1);
  record_t tmp;
  record_init_strings(&tmp, &key, &val);
  records_push_back(&d->recs, &tmp);
  record_destroy(&tmp);
  astr_release(&val);
  astr_release(&key);
  astr_release(&line);
  return 0;
}

static const sink_vtbl_t dump_vtbl = {dump_append};

/* Formats one entry as the dump's text line (LevelDB's part, optimised in the authors' build:
   appends of whole pieces) and hands it over. */
static int dump_entry(void *arg, const uint8_t *ikey, size_t iklen, const uint8_t *val,
                      size_t vlen) {
  dump_t *d = arg;
  internal_key_parts_t k;
  d->line.len = 0;
  if (internal_key_parse(ikey, iklen, &k) != 0) {
    line_put(&d->line, "badkey '", 8);
    line_put_escaped(&d->line, ikey, iklen);
  } else {
    line_put(&d->line, "'", 1);
    line_put_escaped(&d->line, k.user_key, k.user_len);
    line_put(&d->line, "' @ ", 4);
    line_put_number(&d->line, k.seq);
    line_put(&d->line, k.type == LSM_TYPE_VALUE ? " : val" : " : del", 6);
  }
  line_put(&d->line, " => '", 5);
  line_put_escaped(&d->line, val, vlen);
  line_put(&d->line, "'\n", 2);
  slice_t s = {d->line.p, d->line.len};
  return d->vptr->append(d, &s);
}

/* Reads table `number` as the authors' scan does; *matches gets the entries holding val, and
   fn (NULL: none) their keys. */
static int dump_table(exp_authors_t *a, uint64_t number, const void *val, size_t len,
                      bfh_match_fn fn, void *arg, uint64_t *matches, bfh_search_stats *st) {
  table_t *t = NULL;
  err_t err;
  err_clear(&err);
  char *path = table_file_path(a->dir, number);
  int rc = path ? table_open(env_default(), path, number, &t, &err)
                : err_set(&err, ST_E_NOMEM, "table %06llu: no memory for its path",
                          (unsigned long long)number);
  free(path);
  if (rc != ST_OK) {
    fprintf(stderr, "bfh: authors' costs: %s\n", err.msg);
    return rc;
  }
  dump_t d;
  memset(&d, 0, sizeof d);
  d.vptr = &dump_vtbl;
  uint64_t bad = 0;
  rc = table_walk(t, dump_entry, NULL, &d, &bad);
  st->bytes_read += table_file_size(t);
  table_unref(t);
  free(d.line.p);
  if (rc != 0 || bad) {
    records_release(&d.recs);
    fprintf(stderr, "bfh: authors' costs: table %06llu: %llu damaged blocks\n",
            (unsigned long long)number, (unsigned long long)bad);
    return BFH_E_CORRUPT;
  }
  /* The records are handed back as a copy of the vector (the dump's own is then destroyed);
     the loop takes each by value (a copy) and copies its value once more before comparing. */
  records_t copy;
  records_init_copy(&copy, &d.recs);
  records_release(&d.recs);
  astr_t wanted;
  astr_assign(&wanted, val, len);
  uint64_t found = 0;
  rec_iter_t end = records_iter_end(&copy);
  for (rec_iter_t it = records_iter_begin(&copy); rec_iter_neq(&it, &end); rec_iter_next(&it)) {
    record_t r;
    record_init_copy(&r, rec_iter_deref(&it));
    astr_t v;
    astr_copy(&v, &r.val_data);
    const int equal = astr_equals(&v, &wanted);
    found += (uint64_t)equal;
    if (equal && fn)
      (void)fn(arg, astr_data(&r.key_data), astr_size(&r.key_data)); /* the experiments' check */
    astr_release(&v);
    record_destroy(&r);
  }
  astr_release(&wanted);
  st->entries_scanned += records_size(&copy);
  st->tables_scanned++;
  if (found) st->tables_matched++;
  *matches += found;
  records_release(&copy);
  return BFH_OK;
}

/* ---- leaf files ------------------------------------------------------------------------- */

/* A bitset and a reference to one of its bits, as the C++ library's std::bitset. */
typedef struct bitset {
  uint64_t *words;
  size_t nbits;
} bitset_t;

typedef struct bitref {
  uint64_t *word;
  size_t bit;
} bitref_t;

static size_t bitset_size(const bitset_t *b) { return b->nbits; }
static size_t which_word(size_t i) { return i / 64; }
static size_t which_bit(size_t i) { return i % 64; }
static uint64_t mask_bit(size_t i) { return (uint64_t)1 << which_bit(i); }
static uint64_t *get_word(bitset_t *b, size_t i) { return &b->words[which_word(i)]; }

/* A reference to bit i: constructed from the bitset (its word, its bit), assigned, then
   destroyed; each step is a call at -O0, as std::bitset's operator[] and its reference are. */
static void bitref_init(bitref_t *r, bitset_t *b, size_t i) {
  r->word = get_word(b, i);
  r->bit = which_bit(i);
}

static void bitref_release(bitref_t *r) { (void)r; }

static bitref_t bitset_at(bitset_t *b, size_t i) {
  bitref_t r;
  bitref_init(&r, b, i);
  return r;
}

static void bitref_assign(const bitref_t *r, int v) {
  if (v)
    *r->word |= mask_bit(r->bit);
  else
    *r->word &= ~mask_bit(r->bit);
}

static int bitset_test(bitset_t *b, size_t i) { return (*get_word(b, i) & mask_bit(i)) != 0; }

static const char *byte_at(const char *buf, size_t i) { return &buf[i]; }

static void leaf_path(const exp_authors_t *a, uint64_t number, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/%06llu.bloom", a->leaf_dir, (unsigned long long)number);
}

static size_t leaf_bytes(uint64_t m) { return (size_t)((m + 7) / 8); }

/* Loads leaf `number` as the authors' code does: the file read whole into a buffer, then
   the bitset set from it one bit at a time. 0, or -1 if the file cannot be read. */
static int leaf_load_bitwise(const exp_authors_t *a, uint64_t number, bitset_t *b) {
  char path[1300];
  leaf_path(a, number, path, sizeof path);
  FILE *f = exp_fopen(path, "rb");
  if (!f) return -1;
  int32_t k = 0;
  size_t nb = leaf_bytes(a->m);
  char *buf = calloc(nb, 1);
  int ok = buf && fread(&k, sizeof k, 1, f) == 1 && fread(buf, 1, nb, f) == nb;
  fclose(f);
  if (ok) {
    for (size_t i = 0; i < bitset_size(b); i++) {
      bitref_t r = bitset_at(b, i);
      bitref_assign(&r, (*byte_at(buf, i / 8) >> (i % 8)) & 1);
      bitref_release(&r);
    }
  }
  free(buf);
  return ok ? 0 : -1;
}

/* Loads leaf `number` and tests p against it: 1 maybe (also when unreadable), 0 no. */
static int leaf_probe_file(exp_authors_t *a, uint64_t number, const probe_t *p) {
  bitset_t b = {calloc(bits_words(a->m), sizeof(uint64_t)), (size_t)a->m};
  if (!b.words) return 1;
  int maybe = 1;
  if (leaf_load_bitwise(a, number, &b) == 0)
    for (uint32_t i = 0; i < p->k && maybe; i++) maybe = bitset_test(&b, (size_t)p->pos[i]);
  free(b.words);
  a->st->leaf_probes++;
  a->st->leaf_positives += (uint64_t)maybe;
  return maybe;
}

/* hierarchy_leaf_source_t: a reached leaf is loaded from its file; the build reads the
   files directly (untimed). */
static int source_probe(void *ctx, uint64_t id, const probe_t *p) {
  return leaf_probe_file(ctx, id, p);
}

static int source_load(void *ctx, uint64_t id, uint64_t *out) {
  const exp_authors_t *a = ctx;
  char path[1300];
  leaf_path(a, id, path, sizeof path);
  size_t nb = leaf_bytes(a->m);
  uint8_t *buf = malloc(nb);
  FILE *f = exp_fopen(path, "rb");
  int32_t k;
  int ok = buf && f && fread(&k, sizeof k, 1, f) == 1 && fread(buf, 1, nb, f) == nb;
  if (f) fclose(f);
  if (ok) {
    memset(out, 0, bits_words(a->m) * sizeof *out);
    for (size_t i = 0; i < nb; i++) out[i / 8] |= (uint64_t)buf[i] << (8 * (i % 8));
  }
  free(buf);
  return ok ? ST_OK : ST_E_IO;
}

typedef struct filler {
  value_filter_t *f;
} filler_t;

static int fill_entry(void *arg, const uint8_t *ikey, size_t iklen, const uint8_t *val,
                      size_t vlen) {
  filler_t *fl = arg;
  internal_key_parts_t k;
  if (internal_key_parse(ikey, iklen, &k) == 0 && k.type == LSM_TYPE_VALUE)
    value_filter_add(fl->f, val, vlen);
  return 0;
}

/* Writes the leaf file of table `number` unless one of the right size is there. */
static int leaf_write(exp_authors_t *a, uint64_t number) {
  char path[1300], tmp[1320];
  leaf_path(a, number, path, sizeof path);
  struct stat sb;
  size_t nb = leaf_bytes(a->m);
  if (stat(path, &sb) == 0 && (size_t)sb.st_size == sizeof(int32_t) + nb) return BFH_OK;
  table_t *t = NULL;
  err_t err;
  err_clear(&err);
  char *tpath = table_file_path(a->dir, number);
  if (!tpath || table_open(env_default(), tpath, number, &t, &err) != ST_OK) {
    int rc = tpath ? BFH_E_IO : BFH_E_NOMEM;
    fprintf(stderr, "bfh: authors' costs: %s\n", tpath ? err.msg : "no memory");
    free(tpath);
    return rc;
  }
  filler_t fl = {value_filter_create(a->m, a->k, a->seed)};
  uint64_t bad = 0;
  int rc = fl.f ? table_walk(t, fill_entry, NULL, &fl, &bad) : -1;
  table_unref(t);
  if (rc != 0 || bad) {
    value_filter_destroy(fl.f);
    fprintf(stderr, "bfh: authors' costs: cannot read %s\n", tpath);
    free(tpath);
    return BFH_E_CORRUPT;
  }
  free(tpath);
  uint8_t *buf = calloc(nb, 1);
  for (size_t i = 0; buf && i < nb; i++) buf[i] = (uint8_t)(fl.f->words[i / 8] >> (8 * (i % 8)));
  value_filter_destroy(fl.f);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = buf ? exp_fopen(tmp, "wb") : NULL;
  int32_t k = (int32_t)a->k;
  int ok = f && fwrite(&k, sizeof k, 1, f) == 1 && fwrite(buf, 1, nb, f) == nb;
  if (f && fclose(f) != 0) ok = 0;
  free(buf);
  if (!ok || rename(tmp, path) != 0) {
    fprintf(stderr, "bfh: authors' costs: cannot write %s: %s\n", path, strerror(errno));
    remove(tmp);
    return BFH_E_IO;
  }
  return BFH_OK;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return (a > b) - (a < b);
}

/* The table files of the directory (every NNNNNN.sst, as the authors list every .ldb). */
static int list_tables(exp_authors_t *a) {
  DIR *d = opendir(a->dir);
  if (!d) {
    fprintf(stderr, "bfh: authors' costs: cannot list %s: %s\n", a->dir, strerror(errno));
    return BFH_E_IO;
  }
  struct dirent *e;
  size_t cap = 0;
  while ((e = readdir(d)) != NULL) {
    char *end;
    unsigned long long num = strtoull(e->d_name, &end, 10);
    if (end == e->d_name || strcmp(end, "." LSM_TABLE_EXT) != 0) continue;
    if (a->n == cap) {
      cap = cap ? cap * 2 : 256;
      uint64_t *v = realloc(a->numbers, cap * sizeof *v);
      if (!v) {
        closedir(d);
        return BFH_E_NOMEM;
      }
      a->numbers = v;
    }
    a->numbers[a->n++] = num;
  }
  closedir(d);
  qsort(a->numbers, a->n, sizeof *a->numbers, cmp_u64);
  return BFH_OK;
}

int exp_authors_open(const char *dir, uint64_t m, uint32_t k, uint64_t seed, uint32_t d,
                     int placement, exp_authors_t **out) {
  *out = NULL;
  exp_authors_t *a = calloc(1, sizeof *a);
  if (!a) return BFH_E_NOMEM;
  snprintf(a->dir, sizeof a->dir, "%s", dir);
  snprintf(a->leaf_dir, sizeof a->leaf_dir, "%s/authors-leaves", dir);
  a->m = m;
  a->k = k;
  a->seed = seed;
  int rc = list_tables(a);
  if (rc == BFH_OK && mkdir(a->leaf_dir, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "bfh: authors' costs: cannot create %s: %s\n", a->leaf_dir, strerror(errno));
    rc = BFH_E_IO;
  }
  for (size_t i = 0; i < a->n && rc == BFH_OK; i++) rc = leaf_write(a, a->numbers[i]);
  hierarchy_leaf_source_t src = {source_probe, source_load, a};
  if (rc == BFH_OK &&
      !(a->hier = hierarchy_create(d, m, (hierarchy_placement_t)placement, &src))) {
    fprintf(stderr, "bfh: authors' costs: cannot create a hierarchy (d=%u m=%llu)\n", d,
            (unsigned long long)m);
    rc = BFH_E_NOMEM;
  }
  if (rc == BFH_OK) {
    if (placement == BFH_PLACEMENT_SIMILARITY) {
      for (size_t i = 0; i < a->n && rc == ST_OK; i++)
        rc = hierarchy_insert(a->hier, a->numbers[i], NULL);
    } else {
      const uint64_t **words = calloc(a->n ? a->n : 1, sizeof *words);
      rc = words ? hierarchy_build(a->hier, a->numbers, words, a->n) : ST_E_NOMEM;
      free(words);
    }
    if (rc != ST_OK) fprintf(stderr, "bfh: authors' costs: hierarchy build failed (%d)\n", rc);
  }
  if (rc != BFH_OK) {
    exp_authors_close(a);
    return rc;
  }
  *out = a;
  return BFH_OK;
}

void exp_authors_close(exp_authors_t *a) {
  if (!a) return;
  hierarchy_destroy(a->hier);
  free(a->numbers);
  free(a);
}

int exp_authors_search(exp_authors_t *a, const void *val, size_t len, bfh_method method,
                       bfh_match_fn fn, void *arg, bfh_search_stats *st) {
  memset(st, 0, sizeof *st);
  st->method_used = (uint32_t)method;
  st->tables_live = (uint32_t)a->n;
  a->st = st;
  probe_t p;
  probe_init(&p, bfh_hash64(val, len, a->seed), a->m, a->k);
  uint64_t matches = 0;
  int rc = BFH_OK;
  if (method == BFH_SEARCH_SCAN || method == BFH_SEARCH_LEAVES) {
    for (size_t i = 0; i < a->n && rc == BFH_OK; i++)
      if (method == BFH_SEARCH_SCAN || leaf_probe_file(a, a->numbers[i], &p))
        rc = dump_table(a, a->numbers[i], val, len, fn, arg, &matches, st);
  } else if (method == BFH_SEARCH_HIERARCHY) {
    u64vec_t reached = {0};
    probe_stats_t ps = {0};
    rc = hierarchy_search(a->hier, &p, &reached, &ps) == ST_OK ? BFH_OK : BFH_E_NOMEM;
    st->internal_probes = ps.internal_probes;
    st->internal_maybe = ps.internal_maybe;
    for (size_t i = 0; i < reached.n && rc == BFH_OK; i++)
      rc = dump_table(a, reached.v[i], val, len, fn, arg, &matches, st);
    u64vec_release(&reached);
  } else {
    rc = BFH_E_INVALID;
    fprintf(stderr, "bfh: the authors' costs have no %d search\n", (int)method);
  }
  st->results = matches;
  st->candidates = matches; /* the entries found in the tables read (no validation step) */
  a->st = NULL;
  return rc;
}
