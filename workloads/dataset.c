/* dataset: real records read from Debian's data packages (dataset.h). */
#include "workloads/dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/u64_map.h"

/* A record: its key and value, both in the dataset's text. */
typedef struct record {
  uint64_t key_off, val_off;
  uint32_t key_len, val_len;
} record_t;

struct dataset {
  dataset_kind_t kind;
  char *text; /* every key and value, back to back */
  size_t len, cap;
  record_t *recs;
  uint64_t n, rcap;
  uint64_t skipped;
};

static const struct {
  const char *name, *path, *package;
  const char *attrs[5];
  size_t nattrs;
} KINDS[DATASET_KINDS] = {
    [DATASET_WORDS] = {"words", "/usr/share/dict/american-english-insane", "wamerican-insane",
                       {"word=json:word", "len=json:len:int", "initial=json:initial"}, 3},
    [DATASET_OUI] = {"oui", "/usr/share/ieee-data/oui.csv", "ieee-data",
                     {"registry=csv:1", "oui=csv:2", "vendor=csv:3"}, 3},
    [DATASET_UNICODE] = {"unicode", "/usr/share/unicode/UnicodeData.txt", "unicode-data",
                         {"cp=json:cp:int", "name=json:name", "cat=json:cat", "ccc=json:ccc:int",
                          "bidi=json:bidi"}, 5},
    [DATASET_WORDNET] = {"wordnet", "/usr/share/wordnet/data.noun", "wordnet-base",
                         {"word=json:word", "words=json:words", "lex=json:lex:int",
                          "ptrs=json:ptrs:int"}, 4},
};

const char *dataset_name(dataset_kind_t kind) { return KINDS[kind].name; }
const char *dataset_default_path(dataset_kind_t kind) { return KINDS[kind].path; }
const char *dataset_package(dataset_kind_t kind) { return KINDS[kind].package; }

const char *const *dataset_attrs(dataset_kind_t kind, size_t *n) {
  *n = KINDS[kind].nattrs;
  return KINDS[kind].attrs;
}

int dataset_kind_parse(const char *name, dataset_kind_t *kind) {
  for (int k = 0; k < DATASET_KINDS; k++)
    if (strcmp(name, KINDS[k].name) == 0) {
      *kind = (dataset_kind_t)k;
      return ST_OK;
    }
  return ST_E_INVALID;
}

/* Appends s[0, n) to d->text. */
static int put(dataset_t *d, const void *s, size_t n) {
  if (d->len + n > d->cap) {
    size_t cap = d->cap ? d->cap : 1u << 16;
    while (cap < d->len + n) cap *= 2;
    char *t = realloc(d->text, cap);
    if (!t) return ST_E_NOMEM;
    d->text = t;
    d->cap = cap;
  }
  memcpy(d->text + d->len, s, n);
  d->len += n;
  return ST_OK;
}

static int put_str(dataset_t *d, const char *s) { return put(d, s, strlen(s)); }

/* Appends s[0, n) as the inside of a JSON string. */
static int put_json_text(dataset_t *d, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[8];
    int rc;
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      rc = put(d, esc, 2);
    } else if (c < 0x20) {
      snprintf(esc, sizeof esc, "\\u%04x", c);
      rc = put(d, esc, 6);
    } else {
      rc = put(d, &s[i], 1);
    }
    if (rc != ST_OK) return rc;
  }
  return ST_OK;
}

static int put_json_field(dataset_t *d, const char *name, const char *s, size_t n, int first) {
  int rc = put_str(d, first ? "{\"" : ",\"");
  if (rc == ST_OK) rc = put_str(d, name);
  if (rc == ST_OK) rc = put_str(d, "\":\"");
  if (rc == ST_OK) rc = put_json_text(d, s, n);
  if (rc == ST_OK) rc = put(d, "\"", 1);
  return rc;
}

static int put_json_int(dataset_t *d, const char *name, long long v, int first) {
  char buf[96];
  int n = snprintf(buf, sizeof buf, "%s\"%s\":%lld", first ? "{" : ",", name, v);
  return put(d, buf, (size_t)n);
}

/* Starts a record whose key is prefix then s[0, n); its value is what is put until
   record_end. */
static int record_begin(dataset_t *d, char prefix, const char *s, size_t n) {
  if (d->n == d->rcap) {
    uint64_t cap = d->rcap ? d->rcap * 2 : 1024;
    record_t *r = realloc(d->recs, cap * sizeof *r);
    if (!r) return ST_E_NOMEM;
    d->recs = r;
    d->rcap = cap;
  }
  record_t *r = &d->recs[d->n];
  r->key_off = d->len;
  r->key_len = (uint32_t)(n + 1);
  int rc = put(d, &prefix, 1);
  if (rc == ST_OK) rc = put(d, s, n);
  r->val_off = d->len;
  return rc;
}

static void record_end(dataset_t *d) {
  record_t *r = &d->recs[d->n++];
  r->val_len = (uint32_t)(d->len - r->val_off);
}

/* The length of the UTF-8 sequence at s[0, n), or 0 if it is not one (overlong forms,
   surrogates and code points above U+10FFFF included). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  if (s[0] < 0x80) return 1;
  size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
  if (len == 0 || len > n || s[0] > 0xf4) return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
      (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
    return 0;
  return len;
}

static int utf8_valid(const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    size_t k = utf8_seq((const unsigned char *)s + i, n - i);
    if (k == 0) return 0;
    i += k;
  }
  return 1;
}

/* A word: one line. */
static int parse_word(dataset_t *d, const char *s, size_t n) {
  if (n == 0 || !utf8_valid(s, n)) return ST_E_INVALID;
  char key[24];
  int kn = snprintf(key, sizeof key, "%llu", (unsigned long long)d->n);
  char initial[4];
  size_t in = utf8_seq((const unsigned char *)s, n);
  memcpy(initial, s, in);
  if (in == 1 && initial[0] >= 'A' && initial[0] <= 'Z') initial[0] = (char)(initial[0] + 32);
  int rc = record_begin(d, 'w', key, (size_t)kn);
  if (rc == ST_OK) rc = put_json_field(d, "word", s, n, 1);
  if (rc == ST_OK) rc = put_json_int(d, "len", (long long)n, 0);
  if (rc == ST_OK) rc = put_json_field(d, "initial", initial, in, 0);
  if (rc == ST_OK) rc = put(d, "}", 1);
  return rc;
}

/* A UnicodeData.txt line: code;name;category;ccc;bidi;... (15 fields). */
static int parse_unicode(dataset_t *d, const char *s, size_t n) {
  const char *f[15];
  size_t fl[15], nf = 0;
  for (size_t i = 0, start = 0; i <= n && nf < 15; i++)
    if (i == n || s[i] == ';') {
      f[nf] = s + start;
      fl[nf++] = i - start;
      start = i + 1;
    }
  if (nf < 5 || fl[0] == 0 || fl[0] > 6 || fl[1] == 0 || fl[2] == 0 || fl[3] == 0 ||
      fl[3] > 3 || !utf8_valid(s, n))
    return ST_E_INVALID;
  unsigned long cp = 0, ccc = 0;
  for (size_t i = 0; i < fl[0]; i++) {
    char c = f[0][i];
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (v < 0) return ST_E_INVALID;
    cp = cp * 16 + (unsigned long)v;
  }
  for (size_t i = 0; i < fl[3]; i++) {
    if (f[3][i] < '0' || f[3][i] > '9') return ST_E_INVALID;
    ccc = ccc * 10 + (unsigned long)(f[3][i] - '0');
  }
  if (cp > 0x10ffff) return ST_E_INVALID;
  int rc = record_begin(d, 'u', f[0], fl[0]);
  if (rc == ST_OK) rc = put_json_int(d, "cp", (long long)cp, 1);
  if (rc == ST_OK) rc = put_json_field(d, "name", f[1], fl[1], 0);
  if (rc == ST_OK) rc = put_json_field(d, "cat", f[2], fl[2], 0);
  if (rc == ST_OK) rc = put_json_int(d, "ccc", (long long)ccc, 0);
  if (rc == ST_OK) rc = put_json_field(d, "bidi", f[4], fl[4], 0);
  if (rc == ST_OK) rc = put(d, "}", 1);
  return rc;
}

/* The next space-separated field of s[*i, n) (*i moves past it and its space); 0 at the end. */
static size_t wn_field(const char *s, size_t n, size_t *i, const char **f) {
  size_t start = *i, end = start;
  while (end < n && s[end] != ' ') end++;
  *f = s + start;
  *i = end < n ? end + 1 : end;
  return end - start;
}

/* The field as a number in base (10 or 16), at most 8 digits; -1 if it is not one. */
static long wn_number(const char *f, size_t len, int base) {
  if (len == 0 || len > 8) return -1;
  long v = 0;
  for (size_t i = 0; i < len; i++) {
    char c = f[i];
    int d = c >= '0' && c <= '9'                  ? c - '0'
            : base == 16 && c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                  : -1;
    if (d < 0) return -1;
    v = v * base + d;
  }
  return v;
}

/* A WordNet data.noun line (wndb(5)): offset lex_filenum ss_type w_cnt (hex) then w_cnt
   (word lex_id) pairs, p_cnt and p_cnt pointers of four fields, then "| gloss". The value
   keeps the synset's first word, all its words (an array: a multi-valued attribute), its
   lexicographer file number, its pointer count and its gloss; underscores in words become
   spaces. */
static int parse_wordnet(dataset_t *d, const char *s, size_t n) {
  const char *f, *offset, *words[64];
  size_t i = 0, wl[64];
  size_t offset_len = wn_field(s, n, &i, &offset);
  size_t len = wn_field(s, n, &i, &f);
  long lex = wn_number(f, len, 10);
  len = wn_field(s, n, &i, &f); /* ss_type */
  if (wn_number(offset, offset_len, 10) < 0 || lex < 0 || len != 1 || !utf8_valid(s, n))
    return ST_E_INVALID;
  len = wn_field(s, n, &i, &f);
  long nwords = wn_number(f, len, 16);
  if (nwords <= 0 || nwords > 64) return ST_E_INVALID;
  for (long w = 0; w < nwords; w++) {
    wl[w] = wn_field(s, n, &i, &words[w]);
    if (wl[w] == 0 || wn_field(s, n, &i, &f) != 1) return ST_E_INVALID; /* word, lex_id */
  }
  len = wn_field(s, n, &i, &f);
  long ptrs = wn_number(f, len, 10);
  if (ptrs < 0) return ST_E_INVALID;
  const char *bar = memchr(s + i, '|', n - i);
  if (!bar) return ST_E_INVALID;
  const char *gloss = bar + 1 + (bar + 1 < s + n && bar[1] == ' ');
  size_t gloss_len = (size_t)(s + n - gloss);
  while (gloss_len > 0 && gloss[gloss_len - 1] == ' ') gloss_len--;

  int rc = record_begin(d, 'n', offset, offset_len);
  for (long w = 0; w <= nwords && rc == ST_OK; w++) {
    /* words[0] first as "word", then every word into the "words" array */
    const long at = w == 0 ? 0 : w - 1;
    char text[256];
    if (wl[at] >= sizeof text) return ST_E_INVALID;
    for (size_t c = 0; c < wl[at]; c++) text[c] = words[at][c] == '_' ? ' ' : words[at][c];
    if (w == 0) {
      rc = put_json_field(d, "word", text, wl[at], 1);
      if (rc == ST_OK) rc = put_str(d, ",\"words\":[");
    } else {
      if (w > 1) rc = put(d, ",", 1);
      if (rc == ST_OK) rc = put(d, "\"", 1);
      if (rc == ST_OK) rc = put_json_text(d, text, wl[at]);
      if (rc == ST_OK) rc = put(d, "\"", 1);
    }
  }
  if (rc == ST_OK) rc = put(d, "]", 1);
  if (rc == ST_OK) rc = put_json_int(d, "lex", lex, 0);
  if (rc == ST_OK) rc = put_json_int(d, "ptrs", ptrs, 0);
  if (rc == ST_OK) rc = put_json_field(d, "gloss", gloss, gloss_len, 0);
  if (rc == ST_OK) rc = put(d, "}", 1);
  return rc;
}

/* FNV-1a of s[0, n), never 0 (u64_map's free mark). */
static uint64_t key_hash(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h | 1;
}

/* Keeps the record just parsed (d->recs[d->n]) unless an earlier record has its key (keys:
   key hash -> record): ST_OK, ST_E_INVALID for a repeated key (the registry lists two OUI
   assignments twice), or ST_E_NOMEM. */
static int record_keep(dataset_t *d, u64_map_t *keys) {
  const record_t *rec = &d->recs[d->n];
  const char *k = d->text + rec->key_off;
  uint64_t h = key_hash(k, rec->key_len), r;
  if (u64_map_get(keys, h, &r) && d->recs[r].key_len == rec->key_len &&
      memcmp(d->text + d->recs[r].key_off, k, rec->key_len) == 0)
    return ST_E_INVALID;
  if (u64_map_put(keys, h, d->n) != ST_OK) return ST_E_NOMEM;
  record_end(d);
  return ST_OK;
}

/* 1 if s[0, n) is one well-formed RFC 4180 record: each field either unquoted, without a
   quote, or quoted, its quotes inside doubled and a comma or the end right after it. The
   csv:N extractors read such a record's every field. */
static int csv_record_valid(const char *s, size_t n) {
  for (size_t i = 0;;) {
    if (i < n && s[i] == '"') {
      for (i++;; i++) {
        if (i == n) return 0; /* the quote never closes */
        if (s[i] != '"') continue;
        if (i + 1 < n && s[i + 1] == '"') {
          i++;
          continue;
        }
        break;
      }
      i++;
    } else {
      while (i < n && s[i] != ',') {
        if (s[i] == '"' || s[i] == '\n') return 0;
        i++;
      }
    }
    if (i == n) return 1;
    if (s[i] != ',') return 0; /* text after a closing quote */
    i++;
  }
}

/* An oui.csv record (RFC 4180, its line terminator cut): the key is its second field. A
   record that is not well-formed CSV is skipped. */
static int parse_oui(dataset_t *d, const char *s, size_t n) {
  const char *comma = memchr(s, ',', n);
  if (!comma || n == 0 || s[0] == '"') return ST_E_INVALID;
  const char *f2 = comma + 1, *end = s + n;
  const char *f2_end = memchr(f2, ',', (size_t)(end - f2));
  if (!f2_end || f2_end == f2 || *f2 == '"' || (size_t)(f2_end - f2) > DATASET_MAX_KEY - 24 ||
      !utf8_valid(s, n) || !csv_record_valid(s, n))
    return ST_E_INVALID;
  int rc = record_begin(d, 'o', f2, (size_t)(f2_end - f2));
  if (rc == ST_OK) rc = put(d, s, n);
  return rc;
}

/* The end of the record that starts at s[i] (the index of its terminating '\n', or len),
   and *quoted set when it ends inside an open quote. */
static size_t record_end_at(dataset_kind_t kind, const char *s, size_t i, size_t len,
                            int *quoted) {
  int in = 0;
  for (; i < len; i++) {
    if (kind == DATASET_OUI && s[i] == '"') in = !in;
    else if (s[i] == '\n' && !in) break;
  }
  *quoted = in;
  return i;
}

int dataset_parse(dataset_kind_t kind, const char *data, size_t len, dataset_t **out,
                  err_t *err) {
  *out = NULL;
  dataset_t *d = calloc(1, sizeof *d);
  if (!d) return err_set(err, ST_E_NOMEM, "dataset %s: out of memory", KINDS[kind].name);
  d->kind = kind;
  u64_map_t keys; /* the keys so far */
  u64_map_init(&keys);
  int rc = ST_OK;
  for (size_t i = 0; i < len && rc == ST_OK;) {
    int quoted;
    size_t end = record_end_at(kind, data, i, len, &quoted), n = end - i;
    const char *s = data + i;
    /* oui.csv's column names; WordNet's license, each line of it indented by two spaces */
    int header = (kind == DATASET_OUI && i == 0 && n >= 9 && memcmp(s, "Registry,", 9) == 0) ||
                 (kind == DATASET_WORDNET && n >= 2 && s[0] == ' ' && s[1] == ' ');
    while (n > 0 && (s[n - 1] == '\r' || (kind == DATASET_OUI && s[n - 1] == ' '))) n--;
    if (!header && n > 0) {
      const size_t mark = d->len; /* a record refused part-way leaves its text unused */
      rc = quoted ? ST_E_INVALID
           : kind == DATASET_WORDS ? parse_word(d, s, n)
           : kind == DATASET_OUI   ? parse_oui(d, s, n)
           : kind == DATASET_WORDNET ? parse_wordnet(d, s, n)
                                   : parse_unicode(d, s, n);
      if (rc == ST_OK) rc = record_keep(d, &keys);
      if (rc == ST_E_INVALID) {
        d->len = mark;
        d->skipped++;
        rc = ST_OK;
      }
    }
    i = end + 1;
  }
  u64_map_release(&keys);
  if (rc != ST_OK) {
    dataset_destroy(d);
    return err_set(err, rc, "dataset %s: out of memory", KINDS[kind].name);
  }
  *out = d;
  return ST_OK;
}

int dataset_open(dataset_kind_t kind, const char *path, dataset_t **out, err_t *err) {
  *out = NULL;
  if (!path) path = KINDS[kind].path;
  FILE *f = fopen(path, "rb");
  if (!f)
    return err_errno(err, errno, "dataset %s: %s (Debian package %s)", KINDS[kind].name, path,
                     KINDS[kind].package);
  char *buf = NULL;
  size_t len = 0, cap = 0, got;
  int rc = ST_OK;
  do {
    if (len == cap) {
      char *b = realloc(buf, cap = cap ? cap * 2 : 1u << 20);
      if (!b) {
        rc = err_set(err, ST_E_NOMEM, "dataset %s: out of memory reading %s", KINDS[kind].name,
                     path);
        break;
      }
      buf = b;
    }
    got = fread(buf + len, 1, cap - len, f);
    len += got;
  } while (got > 0);
  if (rc == ST_OK && ferror(f))
    rc = err_errno(err, errno, "dataset %s: reading %s", KINDS[kind].name, path);
  fclose(f);
  if (rc == ST_OK) rc = dataset_parse(kind, buf, len, out, err);
  free(buf);
  if (rc == ST_OK && (*out)->n == 0) {
    dataset_destroy(*out);
    *out = NULL;
    return err_set(err, ST_E_INVALID, "dataset %s: %s holds no record", KINDS[kind].name, path);
  }
  return rc;
}

void dataset_destroy(dataset_t *d) {
  if (!d) return;
  free(d->text);
  free(d->recs);
  free(d);
}

uint64_t dataset_count(const dataset_t *d) { return d->n; }
uint64_t dataset_skipped(const dataset_t *d) { return d->skipped; }

void dataset_record(const dataset_t *d, uint64_t i, char key[DATASET_MAX_KEY], size_t *key_len,
                    const char **val, size_t *val_len) {
  const record_t *r = &d->recs[i % d->n];
  memcpy(key, d->text + r->key_off, r->key_len);
  size_t n = r->key_len;
  if (i >= d->n) n += (size_t)snprintf(key + n, DATASET_MAX_KEY - n, ".%llu",
                                       (unsigned long long)(i / d->n));
  *key_len = n;
  *val = d->text + r->val_off;
  *val_len = r->val_len;
}
