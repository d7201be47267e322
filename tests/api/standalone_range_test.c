/* The stand-alone index's range scans (index/standalone.h: standalone_scan_range), with the
 * real own engine and real files, against an oracle of each key's live terms:
 *   - an :int attribute (declared without :range: the index holds its terms whatever the
 *     filters hold), its values negative, zero, positive and the int64 extremes; every range
 *     whose ends are drawn from those values and their neighbours, each end inclusive,
 *     exclusive or absent, lo > hi among them (empty);
 *   - a text attribute whose terms hold 0x00 and 0x01 bytes (the escape and the end mark),
 *     the empty string, texts longer than 8 bytes, and two of more than STANDALONE_TERM_MAX
 *     bytes that share their first STANDALONE_TERM_MAX (one entry prefix: reported for any
 *     range that may hold them, and nowhere else); the same ranges, and every prefix of every
 *     term, the empty prefix included;
 *   - the whole value of a database without attributes (one seek per value length held, the
 *     lengths' varints of one and two bytes), with a value held by its hash, reported always;
 *   - an index whose ATTRIBUTES record lacks the format line (format 1, length-first text
 *     terms) is built again at the open, and then scans right.
 * Writes include overwrites and deletes, so that the index's stale entries are gone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bfh.h"
#include "api/testbed.h"
#include "index/standalone.h"
#include "query/attr.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"

#define NKEYS 160

static int setup(void **state) {
  return db_fixture_setup(state, "standalone_range_test");
}

/* A byte string of the oracle. */
typedef struct text {
  const char *p;
  size_t n;
} text_t;

#define T(s) \
  { s, sizeof s - 1 }
static const int64_t INTS[] = {INT64_MIN, INT64_MIN + 1, -65536, -256,          -1,       0, 1,
                               255,       256,           65536,  INT64_MAX - 1, INT64_MAX};
#define NINTS (sizeof INTS / sizeof INTS[0])
static const text_t TEXTS[] = {
    T(""),         T("a"),          T("a\0"),        T("a\0b"),     T("a\0\1"), T("a\1"), T("ab"),
    T("abcdefgh"), T("abcdefghij"), T("abcdefghik"), T("abcdefgi"), T("b"),     T("\x7f")};
#define NTEXTS (sizeof TEXTS / sizeof TEXTS[0])
/* Ends that no value holds, beside the values' own. */
static const int64_t INT_EXTRA[] = {-2, 2, 65535};
static const text_t TEXT_EXTRA[] = {T("a\0\0"), T("abcdefghi"), T("aa"), T("c")};

/* The two long terms: 'x' * STANDALONE_TERM_MAX, then 'a' or 'b'. */
static text_t long_text[2];

static void long_init(void) {
  for (int i = 0; i < 2; i++) {
    char *p = malloc(STANDALONE_TERM_MAX + 1);
    assert_non_null(p);
    memset(p, 'x', STANDALONE_TERM_MAX);
    p[STANDALONE_TERM_MAX] = (char)('a' + i);
    long_text[i] = (text_t){p, STANDALONE_TERM_MAX + 1};
  }
}

static void long_free(void) {
  for (int i = 0; i < 2; i++) free((void *)long_text[i].p);
}

/* Key i's live terms: int -1 or an index into INTS, text -1 or an index into TEXTS (NTEXTS,
   NTEXTS + 1: the long ones). */
typedef struct live {
  int present, n, t;
} live_t;

static text_t text_of(int t) {
  return t < (int)NTEXTS ? TEXTS[t] : long_text[t - NTEXTS];
}

static int text_cmp(text_t a, text_t b) {
  size_t m = a.n < b.n ? a.n : b.n;
  int c = m ? memcmp(a.p, b.p, m) : 0;
  return c ? c : (a.n > b.n) - (a.n < b.n);
}

/* The JSON of a live_t into a malloc'd buffer: NUL and other control bytes as \u00XX. */
static char *json_value(const live_t *l, size_t *len) {
  text_t t = l->t >= 0 ? text_of(l->t) : (text_t){"", 0};
  char *buf = malloc(t.n * 6 + 128), *p = buf;
  assert_non_null(buf);
  p += sprintf(p, "{");
  if (l->n >= 0) p += sprintf(p, "\"n\":%lld%s", (long long)INTS[l->n], l->t >= 0 ? "," : "");
  if (l->t >= 0) {
    p += sprintf(p, "\"t\":\"");
    for (size_t i = 0; i < t.n; i++) {
      unsigned char c = (unsigned char)t.p[i];
      if (c < 0x20 || c == '"' || c == '\\' || c == 0x7f)
        p += sprintf(p, "\\u%04x", c);
      else
        *p++ = (char)c;
    }
    p += sprintf(p, "\"");
  }
  p += sprintf(p, "}");
  *len = (size_t)(p - buf);
  return buf;
}

static void key_name(int i, char *buf, size_t cap) {
  snprintf(buf, cap, "k%03d", i);
}

/* Key i's value in round r: a mix of absent fields and every int and text; keys LONG_KEY and
   LONG_KEY + 2 (never overwritten or deleted) hold the long texts, few so that the scans
   stay cheap under the sanitizers. */
#define LONG_KEY 5
static live_t draw(int i, int r) {
  int j = i + 3 * r;
  live_t l = {1, j % 7 == 3 ? -1 : j % (int)NINTS, j % 5 == 2 ? -1 : j % (int)NTEXTS};
  if (i == LONG_KEY || i == LONG_KEY + 2) l.t = (int)NTEXTS + (i - LONG_KEY) / 2;
  return l;
}

/* Puts every key, overwrites a quarter with other terms, deletes a ninth. */
static void load(bfh_db *db, live_t *live) {
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < NKEYS; i++) {
      if (r == 1 && i % 4 != 0) continue;
      char k[16];
      key_name(i, k, sizeof k);
      live[i] = draw(i, r);
      size_t len;
      char *v = json_value(&live[i], &len);
      assert_int_equal(bfh_put(db, k, strlen(k), v, len), BFH_OK);
      free(v);
    }
  for (int i = 0; i < NKEYS; i += 9) {
    char k[16];
    key_name(i, k, sizeof k);
    assert_int_equal(bfh_delete(db, k, strlen(k)), BFH_OK);
    live[i].present = 0;
  }
}

typedef struct got {
  int times[NKEYS];
} got_t;

static int collect(void *arg, const void *key, size_t len) {
  got_t *g = arg;
  char buf[16];
  assert_true(len > 1 && len < sizeof buf);
  memcpy(buf, key, len);
  buf[len] = 0;
  int i = atoi(buf + 1);
  assert_true(i >= 0 && i < NKEYS);
  g->times[i]++;
  return 0;
}

/* One range as the oracle reads it: which ends, open or not. */
typedef struct rng {
  int has_lo, has_hi, lo_open, hi_open, prefix;
} rng_t;

/* Does x lie in the range (c_lo: x against lo, c_hi: x against hi)? */
static int in_range(const rng_t *r, int c_lo, int c_hi) {
  if (r->has_lo && (c_lo < 0 || (c_lo == 0 && r->lo_open))) return 0;
  if (r->has_hi && (c_hi > 0 || (c_hi == 0 && r->hi_open))) return 0;
  return 1;
}

/* The scan of r over attr equals want[] (1: must come once, 0: must not come, 2: a term held
   cut that may come once, as a candidate, 3: a term held cut or a value held by its hash that
   must come once); the scan counts as inexact exactly the keys it reported under terms held
   cut or hashed (2 and 3). */
static void check_scan(bfh_db *db, size_t attr, const standalone_range_t *sr, const int *want,
                       const char *what) {
  got_t g;
  memset(&g, 0, sizeof g);
  err_t err;
  err_clear(&err);
  uint64_t entries = 0, inexact = 0;
  int rc = standalone_scan_range(bfh_internal_standalone(db), attr, sr, collect, &g, &entries,
                                 &inexact, &err);
  if (rc != BFH_OK) fail_msg("%s: %d %s", what, rc, err.msg);
  uint64_t reported = 0, reported_long = 0;
  for (int i = 0; i < NKEYS; i++) {
    reported += (uint64_t)g.times[i];
    if (want[i] >= 2) reported_long += (uint64_t)g.times[i];
    if ((want[i] == 1 || want[i] == 3) && g.times[i] != 1)
      fail_msg("%s: key %d came %d times, want 1", what, i, g.times[i]);
    if (want[i] == 0 && g.times[i] != 0) fail_msg("%s: key %d came, want none", what, i);
    if (want[i] == 2 && g.times[i] > 1) fail_msg("%s: key %d came %d times", what, i, g.times[i]);
  }
  assert_true(entries >= reported);
  if (inexact != reported_long)
    fail_msg("%s: %llu keys counted inexact, want %llu", what, (unsigned long long)inexact,
             (unsigned long long)reported_long);
}

/* Every int range whose ends come from INTS and INT_EXTRA (or are absent). */
static void check_int_ranges(bfh_db *db, const live_t *live) {
  int64_t ends[NINTS + sizeof INT_EXTRA / sizeof INT_EXTRA[0]];
  size_t ne = 0;
  for (size_t i = 0; i < NINTS; i++) ends[ne++] = INTS[i];
  for (size_t i = 0; i < sizeof INT_EXTRA / sizeof INT_EXTRA[0]; i++) ends[ne++] = INT_EXTRA[i];
  for (size_t a = 0; a <= ne; a++)
    for (size_t b = 0; b <= ne; b++)
      for (int f = 0; f < 4; f++) {
        rng_t r = {a < ne, b < ne, f & 1, (f >> 1) & 1, 0};
        uint8_t lo[ATTR_INT_TERM_BYTES], hi[ATTR_INT_TERM_BYTES];
        if (r.has_lo) attr_int_term(ends[a], lo);
        if (r.has_hi) attr_int_term(ends[b], hi);
        standalone_range_t sr = {
            r.has_lo ? lo : NULL, 8, r.lo_open, r.has_hi ? hi : NULL, 8, r.hi_open, 0};
        int want[NKEYS];
        for (int i = 0; i < NKEYS; i++) {
          int64_t x = live[i].n >= 0 ? INTS[live[i].n] : 0;
          int cl = r.has_lo ? (x > ends[a]) - (x < ends[a]) : 1;
          int ch = r.has_hi ? (x > ends[b]) - (x < ends[b]) : -1;
          want[i] = live[i].present && live[i].n >= 0 && in_range(&r, cl, ch);
        }
        char what[128];
        snprintf(what, sizeof what, "n: %s%lld .. %lld%s (lo %d, hi %d)", r.lo_open ? "(" : "[",
                 (long long)(r.has_lo ? ends[a] : 0), (long long)(r.has_hi ? ends[b] : 0),
                 r.hi_open ? ")" : "]", r.has_lo, r.has_hi);
        check_scan(db, 0, &sr, want, what);
      }
}

/* Cuts t to what the index holds of it: its first STANDALONE_TERM_MAX bytes. */
static text_t cut_text(text_t t) {
  if (t.n > STANDALONE_TERM_MAX) t.n = STANDALONE_TERM_MAX;
  return t;
}

/* want[] for a text range or prefix (lo the prefix): a term held cut (the long ones) must come
   when it is in (3), and may come when its first bytes may be (2; compared with the ends cut
   alike, ends included), never otherwise. */
static void text_want(const rng_t *r, text_t lo, text_t hi, const live_t *live, int *want) {
  for (int i = 0; i < NKEYS; i++) {
    want[i] = 0;
    if (!live[i].present || live[i].t < 0) continue;
    text_t x = text_of(live[i].t);
    int yes = r->prefix ? x.n >= lo.n && memcmp(x.p, lo.p, lo.n) == 0
                        : in_range(r, text_cmp(x, lo), text_cmp(x, hi));
    if (live[i].t < (int)NTEXTS) {
      want[i] = yes;
      continue;
    }
    text_t c = cut_text(x), cl = cut_text(lo), ch = cut_text(hi);
    rng_t closed = {r->has_lo, r->has_hi, 0, 0, 0};
    int maybe = r->prefix ? memcmp(c.p, cl.p, cl.n) == 0
                          : in_range(&closed, text_cmp(c, cl), text_cmp(c, ch));
    assert_true(!yes || maybe);
    want[i] = yes ? 3 : maybe ? 2 : 0;
  }
}

/* Every text range over ends from TEXTS and TEXT_EXTRA, and every prefix of every term. */
static void check_text_ranges(bfh_db *db, const live_t *live, size_t attr) {
  text_t ends[NTEXTS + 2 + sizeof TEXT_EXTRA / sizeof TEXT_EXTRA[0]];
  size_t ne = 0;
  for (size_t i = 0; i < NTEXTS; i++) ends[ne++] = TEXTS[i];
  for (size_t i = 0; i < 2; i++) ends[ne++] = long_text[i];
  for (size_t i = 0; i < sizeof TEXT_EXTRA / sizeof TEXT_EXTRA[0]; i++) ends[ne++] = TEXT_EXTRA[i];
  int want[NKEYS];
  for (size_t a = 0; a <= ne; a++)
    for (size_t b = 0; b <= ne; b++)
      for (int f = 0; f < 4; f++) {
        rng_t r = {a < ne, b < ne, f & 1, (f >> 1) & 1, 0};
        text_t lo = r.has_lo ? ends[a] : (text_t){"", 0}, hi = r.has_hi ? ends[b] : (text_t){"", 0};
        standalone_range_t sr = {
            r.has_lo ? lo.p : NULL, lo.n, r.lo_open, r.has_hi ? hi.p : NULL, hi.n, r.hi_open, 0};
        text_want(&r, lo, hi, live, want);
        char what[96];
        snprintf(what, sizeof what, "t: ends %zu, %zu, flags %d", a, b, f);
        check_scan(db, attr, &sr, want, what);
      }
  for (size_t a = 0; a < ne; a++)
    for (size_t n = 0; n <= ends[a].n && n <= 11; n++) {
      rng_t r = {1, 0, 0, 0, 1};
      text_t p = {ends[a].p, n};
      standalone_range_t sr = {p.p, p.n, 0, NULL, 0, 0, 1};
      text_want(&r, p, p, live, want);
      char what[96];
      snprintf(what, sizeof what, "t: prefix of %zu bytes of end %zu", n, a);
      check_scan(db, attr, &sr, want, what);
    }
}

static void attr_options(bfh_options *o, const bfh_attribute *attrs, size_t n) {
  bfh_options_init(o);
  o->memtable_bytes = 64 << 10; /* the index flushes and compacts: scans cross tables */
  o->table_bytes = 16 << 10;
  o->value_filter_bits = 4096;
  o->standalone_index = 1;
  o->attributes = attrs;
  o->attribute_count = n;
}

static const bfh_attribute ATTRS[2] = {{"n", "json:n:int"}, {"t", "json:t"}};

static bfh_db *open_or_fail(const char *dir, const bfh_options *o) {
  bfh_db *db = NULL;
  int rc = bfh_open(dir, o, &db);
  if (rc != BFH_OK) fail_msg("bfh_open %s: %d %s", dir, rc, bfh_last_error(NULL));
  return db;
}

/* Ranges over an :int and a text attribute, before and after a reopen. */
static void test_standalone_range_attributes(void **state) {
  db_fixture_t *f = *state;
  long_init();
  bfh_options o;
  attr_options(&o, ATTRS, 2);
  f->db = open_or_fail(f->dir, &o);
  live_t live[NKEYS];
  load(f->db, live);
  check_int_ranges(f->db, live);
  check_text_ranges(f->db, live, 1);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = open_or_fail(f->dir, &o);
  check_int_ranges(f->db, live);
  /* An end that is not an :int term is refused, not read. */
  err_t err;
  err_clear(&err);
  standalone_range_t bad = {"ab", 2, 0, NULL, 0, 0, 0};
  assert_int_equal(standalone_scan_range(bfh_internal_standalone(f->db), 0, &bad, collect, NULL,
                                         NULL, NULL, &err),
                   BFH_E_INVALID);
  assert_int_equal(standalone_scan_range(bfh_internal_standalone(f->db), 2, &bad, collect, NULL,
                                         NULL, NULL, &err),
                   BFH_E_INVALID);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  long_free();
}

/* The whole value of a database without attributes: values of lengths whose varints take one
   and two bytes, and one held by its hash (longer than STANDALONE_INLINE_MAX). */
static void test_standalone_range_whole_value(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  attr_options(&o, NULL, 0);
  f->db = open_or_fail(f->dir, &o);
  /* Values: each text of TEXTS, 'y' * 130 and * 200 with a last byte, and a long one. */
  enum { NV = NTEXTS + 3 };
  text_t vals[NV];
  for (size_t i = 0; i < NTEXTS; i++) vals[i] = TEXTS[i];
  char *y130 = malloc(131), *y200 = malloc(201), *big = malloc(STANDALONE_INLINE_MAX + 2);
  assert_true(y130 && y200 && big);
  memset(y130, 'y', 131);
  memset(y200, 'y', 201);
  y200[200] = 'z';
  memset(big, 'a', STANDALONE_INLINE_MAX + 2);
  vals[NTEXTS] = (text_t){y130, 131};
  vals[NTEXTS + 1] = (text_t){y200, 201};
  vals[NTEXTS + 2] = (text_t){big, STANDALONE_INLINE_MAX + 2};
  int which[NKEYS];
  for (int i = 0; i < NKEYS; i++) {
    char k[16];
    key_name(i, k, sizeof k);
    which[i] = i % 11 == 4 ? -1 : i % NV;
    if (which[i] < 0) continue; /* never written */
    assert_int_equal(bfh_put(f->db, k, strlen(k), vals[which[i]].p, vals[which[i]].n), BFH_OK);
  }
  text_t ends[NV + 2];
  for (size_t i = 0; i < NV; i++) ends[i] = vals[i];
  ends[NV] = (text_t){"aa", 2};
  ends[NV + 1] = (text_t){"y", 1};
  int want[NKEYS];
  for (size_t a = 0; a <= NV + 2; a++)
    for (size_t b = 0; b <= NV + 2; b++)
      for (int fl = 0; fl < 5; fl++) {
        rng_t r = {a < NV + 2, b < NV + 2 && fl < 4, fl & 1, (fl >> 1) & 1, fl == 4};
        if (r.prefix && !r.has_lo) continue;
        text_t lo = r.has_lo ? ends[a] : (text_t){"", 0}, hi = r.has_hi ? ends[b] : (text_t){"", 0};
        if (r.prefix && lo.n > 3) lo.n = 3; /* prefixes of each end */
        standalone_range_t sr = {r.has_lo ? lo.p : NULL,
                                 lo.n,
                                 r.lo_open,
                                 r.has_hi ? hi.p : NULL,
                                 hi.n,
                                 r.hi_open,
                                 r.prefix};
        for (int i = 0; i < NKEYS; i++) {
          if (which[i] < 0) {
            want[i] = 0;
            continue;
          }
          text_t x = vals[which[i]];
          int yes = r.prefix ? x.n >= lo.n && memcmp(x.p, lo.p, lo.n) == 0
                             : in_range(&r, text_cmp(x, lo), text_cmp(x, hi));
          /* The long value is held by its hash: a candidate of every range. */
          want[i] = which[i] == NV - 1 ? 3 : yes;
        }
        char what[96];
        snprintf(what, sizeof what, "value: ends %zu, %zu, flags %d", a, b, fl);
        check_scan(f->db, 0, &sr, want, what);
      }
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  free(y130);
  free(y200);
  free(big);
}

/* An index of format 1 (its ATTRIBUTES record without the format line) is built again at the
   open, never read in the new format. */
static void test_standalone_range_format1_rebuilt(void **state) {
  db_fixture_t *f = *state;
  long_init();
  bfh_options o;
  attr_options(&o, ATTRS, 2);
  f->db = open_or_fail(f->dir, &o);
  live_t live[NKEYS];
  load(f->db, live);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  char rec[4400];
  snprintf(rec, sizeof rec, "%s/bfh-standalone/ATTRIBUTES", f->dir);
  FILE *fp = fopen(rec, "rb");
  assert_non_null(fp);
  char buf[512];
  size_t n = fread(buf, 1, sizeof buf, fp);
  fclose(fp);
  static const char line[] = "format 2\n";
  assert_true(n > sizeof line - 1 && memcmp(buf, line, sizeof line - 1) == 0);
  fp = fopen(rec, "wb"); /* the record as format 1 wrote it */
  assert_non_null(fp);
  assert_int_equal(fwrite(buf + sizeof line - 1, 1, n - (sizeof line - 1), fp),
                   n - (sizeof line - 1));
  fclose(fp);
  f->db = open_or_fail(f->dir, &o);
  standalone_stats_t st;
  standalone_get_stats(bfh_internal_standalone(f->db), &st);
  assert_true(st.built_entries > 0);
  check_text_ranges(f->db, live, 1);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  long_free();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_standalone_range_attributes, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_standalone_range_whole_value, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_standalone_range_format1_rebuilt, setup,
                                      db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
