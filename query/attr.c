/* Attributes: declarations, extraction and their stored list. See attr.h for the rules. */
#include "query/attr.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/json_scan.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/json_api.h"

/* ---- Declarations ---- */

static bool is_name_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
static bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

/* The declaration as a message shows it: at most 80 bytes, unprintable bytes as '?'. */
static void shown(const char *decl, char *buf, size_t cap) {
  size_t n = 0;
  for (const char *p = decl; *p && n + 4 < cap && n < 80; p++)
    buf[n++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
  if (decl[n] && n + 4 < cap) {
    memcpy(buf + n, "...", 3);
    n += 3;
  }
  buf[n] = '\0';
}

static int parse_error(err_t *err, const char *decl, const char *at, const char *what) {
  char s[96];
  shown(decl, s, sizeof s);
  return err_set(err, ST_E_INVALID, "attribute '%s': column %zu: %s", s, (size_t)(at - decl) + 1,
                 what);
}

/* Reads decimal digits at *p into *v (at most max), advancing *p past them. 0; -1 when *p
   is no digit; -2 above max, *p at the digit that made it so. */
static int parse_decimal(const char **p, uint64_t max, uint64_t *v) {
  const char *s = *p;
  if (!is_digit(*s)) return -1;
  uint64_t x = 0;
  for (; is_digit(*s); s++) {
    x = x * 10 + (uint64_t)(*s - '0');
    if (x > max) {
      *p = s; /* the digit that made it too large */
      return -2;
    }
  }
  *p = s;
  *v = x;
  return 0;
}

static bool starts(const char *s, const char *word) {
  return strncmp(s, word, strlen(word)) == 0;
}

void attr_range_default(bool is_int, range_levels_t *out) {
  memset(out, 0, sizeof *out);
  unsigned step = is_int ? 4 : 8, top = is_int ? 24 : 56;
  for (unsigned j = step; j <= top; j += step) out->j[out->n++] = (uint8_t)j;
  out->has_zero = is_int;
}

/* After ":range": "=J,J,..." or nothing (the default levels) into out->range. ST_OK with *p
   past them; -1 where a level was expected, -2 at a level out of order or range (*p there). */
static int parse_levels(const char **p, attr_spec_t *out) {
  if (**p != '=') {
    attr_range_default(out->is_int, &out->range);
    return ST_OK;
  }
  range_levels_t lv = {.has_zero = out->is_int};
  do {
    (*p)++;
    const char *at = *p;
    uint64_t v;
    int rc = parse_decimal(p, 63, &v);
    if (rc == -1) return -1;
    if (rc == -2 || v == 0 || lv.n == RANGE_MAX_LEVELS || (lv.n && v <= lv.j[lv.n - 1])) {
      *p = at;
      return -2;
    }
    lv.j[lv.n++] = (uint8_t)v;
  } while (**p == ',');
  out->range = lv;
  return ST_OK;
}

int attr_spec_parse(const char *decl, attr_spec_t *out, err_t *err) {
  memset(out, 0, sizeof *out);
  size_t decl_len = strnlen(decl, ATTR_MAX_DECL_BYTES + 1);
  if (decl_len > ATTR_MAX_DECL_BYTES)
    return parse_error(err, decl, decl + ATTR_MAX_DECL_BYTES,
                       "a declaration is at most 4096 bytes");
  const char *p = decl;
  if (!is_name_start(*p)) return parse_error(err, decl, p, "a name starts with a letter or '_'");
  while (is_name_start(*p) || is_digit(*p)) {
    if (p - decl == ATTR_NAME_MAX_BYTES)
      return parse_error(err, decl, p, "a name is at most 64 bytes");
    p++;
  }
  if (*p != '=')
    return parse_error(err, decl, p,
                       "a name is letters, digits and '_', then '=' and the extractor");
  memcpy(out->name, decl, (size_t)(p - decl));
  p++;
  uint64_t v;
  int rc;
  if (starts(p, "json:")) {
    out->kind = ATTR_JSON;
    p += 5;
    const char *path = p;
    for (;;) {
      const char *seg = p;
      while (*p && *p != '.' && *p != ':') p++;
      if (p == seg) return parse_error(err, decl, p, "an empty path segment");
      out->nkeys++;
      if (*p != '.') break;
      p++;
    }
    size_t n = (size_t)(p - path);
    out->path = malloc(n + 1);
    out->keys = malloc(n + 1);
    if (!out->path || !out->keys) {
      attr_spec_release(out);
      return err_set(err, ST_E_NOMEM, "attribute '%s': out of memory", out->name);
    }
    memcpy(out->path, path, n);
    out->path[n] = '\0';
    for (size_t i = 0; i <= n; i++) out->keys[i] = out->path[i] == '.' ? '\0' : out->path[i];
  } else if (starts(p, "csv:") || starts(p, "tsv:")) {
    out->kind = *p == 'c' ? ATTR_CSV : ATTR_TSV;
    p += 4;
    rc = parse_decimal(&p, ATTR_MAX_FIELD, &v);
    if (rc == -1) return parse_error(err, decl, p, "expected a field number");
    if (rc == -2) return parse_error(err, decl, p, "a field number is at most 65536");
    if (v == 0) return parse_error(err, decl, p - 1, "a field number counts from 1");
    out->field = (uint32_t)v;
  } else if (starts(p, "bytes:")) {
    out->kind = ATTR_BYTES;
    p += 6;
    rc = parse_decimal(&p, UINT32_MAX, &v);
    if (rc == -1) return parse_error(err, decl, p, "expected an offset (decimal)");
    if (rc == -2) return parse_error(err, decl, p, "an offset is at most 4294967295");
    out->offset = (uint32_t)v;
    if (*p != ':') return parse_error(err, decl, p, "expected ':' and a length after the offset");
    p++;
    rc = parse_decimal(&p, UINT32_MAX, &v);
    if (rc == -1) return parse_error(err, decl, p, "expected a length (decimal)");
    if (rc == -2) return parse_error(err, decl, p, "a length is at most 4294967295");
    if (v == 0) return parse_error(err, decl, p - 1, "a length counts from 1");
    out->length = (uint32_t)v;
  } else if (starts(p, "pair:")) {
    p += 5;
    for (int i = 0; i < 2; i++) {
      const char *m = p;
      if (!is_name_start(*p))
        return parse_error(err, decl, p, "a member's name starts with a letter or '_'");
      while (is_name_start(*p) || is_digit(*p)) {
        if (p - m == ATTR_NAME_MAX_BYTES)
          return parse_error(err, decl, p, "a name is at most 64 bytes");
        p++;
      }
      memcpy(out->member[i], m, (size_t)(p - m));
      if (i == 0 && *p != ',')
        return parse_error(err, decl, p, "pair: names two attributes, 'pair:A,B'");
      if (i == 0) p++;
    }
    if (strcmp(out->member[0], out->member[1]) == 0)
      return parse_error(err, decl, p - strlen(out->member[1]),
                         "a composite's two members are distinct attributes");
    if (strcmp(out->member[0], out->name) == 0 || strcmp(out->member[1], out->name) == 0)
      return parse_error(err, decl, decl, "a composite cannot be its own member");
    out->kind = ATTR_PAIR;
    if (*p) return parse_error(err, decl, p, "nothing follows 'pair:A,B' (no :int, no :range)");
    return ST_OK;
  } else if (starts(p, "value") && (p[5] == '\0' || p[5] == ':')) {
    out->kind = ATTR_VALUE;
    p += 5;
  } else {
    return parse_error(err, decl, p,
                       "unknown extractor (json:PATH, csv:N, tsv:N, bytes:OFF:LEN, value or "
                       "pair:A,B)");
  }
  if (starts(p, ":int") && (p[4] == '\0' || p[4] == ':')) {
    out->is_int = true;
    p += 4;
  }
  if (starts(p, ":range") && (p[6] == '\0' || p[6] == '=')) {
    p += 6;
    rc = parse_levels(&p, out);
    if (rc != ST_OK) {
      attr_spec_release(out);
      return parse_error(err, decl, p,
                         rc == -1 ? "expected a level (1 to 63) in the :range list"
                                  : "the :range levels ascend, each 1 to 63, at most 16 of them");
    }
  }
  if (*p) {
    attr_spec_release(out);
    return parse_error(err, decl, p,
                       "only ':int' may follow the extractor, then ':range' or ':range=J,J,...'");
  }
  return ST_OK;
}

void attr_spec_release(attr_spec_t *spec) {
  if (!spec) return;
  free(spec->path);
  free(spec->keys);
  spec->path = spec->keys = NULL;
  spec->nkeys = 0;
}

size_t attr_spec_format(const attr_spec_t *spec, char *buf, size_t cap) {
  char suffix[8 + 6 + 3 * RANGE_MAX_LEVELS] = "";
  size_t k = 0;
  if (spec->is_int) k += (size_t)snprintf(suffix + k, sizeof suffix - k, ":int");
  for (uint32_t i = 0; i < spec->range.n && i < RANGE_MAX_LEVELS; i++)
    k += (size_t)snprintf(suffix + k, sizeof suffix - k, "%s%u",
                          i ? "," : ":range=", spec->range.j[i]);
  int n;
  switch (spec->kind) {
    case ATTR_JSON:
      n = snprintf(buf, cap, "%s=json:%s%s", spec->name, spec->path ? spec->path : "", suffix);
      break;
    case ATTR_CSV:
    case ATTR_TSV:
      n = snprintf(buf, cap, "%s=%s:%u%s", spec->name, spec->kind == ATTR_CSV ? "csv" : "tsv",
                   spec->field, suffix);
      break;
    case ATTR_BYTES:
      n = snprintf(buf, cap, "%s=bytes:%u:%u%s", spec->name, spec->offset, spec->length, suffix);
      break;
    case ATTR_PAIR:
      n = snprintf(buf, cap, "%s=pair:%s,%s", spec->name, spec->member[0], spec->member[1]);
      break;
    default:
      n = snprintf(buf, cap, "%s=value%s", spec->name, suffix);
      break;
  }
  return n < 0 ? 0 : (size_t)n;
}

/* The index of the attribute called name in specs[0, n), or -1. */
static int find_name(const attr_spec_t *specs, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(specs[i].name, name) == 0) return (int)i;
  return -1;
}

int attr_specs_check(const attr_spec_t *specs, size_t n, err_t *err) {
  for (size_t i = 0; i < n; i++) {
    if (specs[i].kind != ATTR_PAIR) continue;
    for (int k = 0; k < 2; k++) {
      const char *m = specs[i].member[k];
      int at = find_name(specs, n, m);
      if (at < 0 || specs[at].kind == ATTR_PAIR)
        return err_set(err, ST_E_INVALID, "attribute '%s=pair:%s,%s': %s %s", specs[i].name,
                       specs[i].member[0], specs[i].member[1], m,
                       at < 0 ? "is not declared" : "is a composite itself; a member is not");
    }
  }
  return ST_OK;
}

size_t attr_pair_term_bytes(size_t alen, size_t blen) {
  uint8_t tmp[VARINT64_MAX_BYTES];
  return (size_t)(encode_varint64(tmp, alen) - tmp) + alen + blen;
}

size_t attr_pair_term(const void *a, size_t alen, const void *b, size_t blen, uint8_t *out) {
  uint8_t *p = encode_varint64(out, alen);
  if (alen) memcpy(p, a, alen);
  if (blen) memcpy(p + alen, b, blen);
  return (size_t)(p - out) + alen + blen;
}

/* ---- Integers ---- */

int attr_int_parse(const char *text, size_t len, int64_t *out) {
  size_t i = 0;
  bool neg = false;
  if (i < len && (text[i] == '+' || text[i] == '-')) neg = text[i++] == '-';
  if (i == len) return ST_E_INVALID;
  uint64_t mag = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; i < len; i++) {
    if (!is_digit(text[i])) return ST_E_INVALID;
    unsigned d = (unsigned)(text[i] - '0');
    if (mag > (limit - d) / 10) return ST_E_INVALID;
    mag = mag * 10 + d;
  }
  *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
  return ST_OK;
}

void attr_int_term(int64_t v, uint8_t out[ATTR_INT_TERM_BYTES]) {
  uint64_t u = (uint64_t)v ^ (1ull << 63);
  for (int i = 0; i < 8; i++) out[i] = (uint8_t)(u >> (56 - 8 * i));
}

/* The exact integer a JSON number's text denotes (-?digits(.digits)?([eE][+-]?digits)?),
   if it is one in the int64 range: ST_OK and *out, else ST_E_INVALID. */
static int json_number_int(const char *s, size_t len, int64_t *out) {
  size_t i = 0;
  bool neg = i < len && s[i] == '-';
  if (neg) i++;
  /* The significant digits, without leading zeros: mantissa = digits x 10^exp10. */
  char digits[24];
  size_t nd = 0;
  int64_t exp10 = 0;
  bool any = false, seen_point = false;
  for (; i < len && (is_digit(s[i]) || (s[i] == '.' && !seen_point)); i++) {
    if (s[i] == '.') {
      seen_point = true;
      continue;
    }
    any = true;
    if (seen_point) exp10--;
    if (nd == 0 && s[i] == '0') continue;
    if (nd == sizeof digits) { /* more digits than any int64: only zeros may follow */
      if (s[i] != '0') return ST_E_INVALID;
      exp10++;
      continue;
    }
    digits[nd++] = s[i];
  }
  if (!any) return ST_E_INVALID;
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    bool eneg = i < len && s[i] == '-';
    if (i < len && (s[i] == '-' || s[i] == '+')) i++;
    if (i == len) return ST_E_INVALID;
    int64_t e = 0;
    for (; i < len; i++) {
      if (!is_digit(s[i])) return ST_E_INVALID;
      if (e < 100000) e = e * 10 + (s[i] - '0');
    }
    exp10 += eneg ? -e : e;
  }
  if (i != len) return ST_E_INVALID;
  if (nd == 0) { /* zero, whatever its exponent */
    *out = 0;
    return ST_OK;
  }
  while (nd > 0 && exp10 < 0 && digits[nd - 1] == '0') {
    nd--;
    exp10++;
  }
  if (exp10 < 0 || exp10 > 19 || nd + (size_t)exp10 > 19) return ST_E_INVALID;
  char text[24];
  size_t n = 0;
  if (neg) text[n++] = '-';
  memcpy(text + n, digits, nd);
  n += nd;
  memset(text + n, '0', (size_t)exp10);
  n += (size_t)exp10;
  return attr_int_parse(text, n, out);
}

/* ---- Extraction ---- */

typedef struct emit {
  const attr_spec_t *spec;
  size_t attr; /* spec's index, as fn is told */
  attr_each_fn fn;
  void *arg;
  int terms;
  bool stop;
} emit_t;

static void emit_term(emit_t *e, const void *term, size_t len) {
  e->terms++;
  if (e->fn(e->arg, e->attr, term, len)) e->stop = true;
}

static void emit_int(emit_t *e, int64_t v) {
  if (e->stop) return;
  uint8_t term[ATTR_INT_TERM_BYTES];
  attr_int_term(v, term);
  emit_term(e, term, sizeof term);
}

/* Reports text[0, len) as a term (under :int, its integer if it reads as one). */
static void emit_text(emit_t *e, const char *text, size_t len) {
  int64_t v;
  if (e->stop) return;
  if (!e->spec->is_int)
    emit_term(e, text, len);
  else if (attr_int_parse(text, len, &v) == ST_OK)
    emit_int(e, v);
}

/* JSON: one tokener per thread (made at first use, freed at the thread's exit). */
static pthread_key_t tokener_key;
static pthread_once_t tokener_once = PTHREAD_ONCE_INIT;
static int tokener_key_rc;

static void tokener_free(void *t) {
  json_tokener_free(t);
}
static void tokener_key_make(void) {
  tokener_key_rc = pthread_key_create(&tokener_key, tokener_free);
}

static json_tokener *thread_tokener(void) {
  pthread_once(&tokener_once, tokener_key_make);
  if (tokener_key_rc != 0) return NULL;
  json_tokener *t = pthread_getspecific(tokener_key);
  if (!t) {
    t = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
    if (!t) return NULL;
    json_tokener_set_flags(t, JSON_TOKENER_STRICT);
    if (pthread_setspecific(tokener_key, t) != 0) {
      json_tokener_free(t);
      return NULL;
    }
  }
  return t;
}

static void json_term(emit_t *e, json_object *o) {
  switch (json_object_get_type(o)) {
    case json_type_string:
      emit_text(e, json_object_get_string(o), (size_t)json_object_get_string_len(o));
      break;
    case json_type_int:
      if (e->spec->is_int) {
        int64_t v = json_object_get_int64(o);
        /* json-c holds integers above INT64_MAX as uint64 (and saturates at UINT64_MAX) */
        if (v == INT64_MAX && json_object_get_uint64(o) > (uint64_t)INT64_MAX) break;
        emit_int(e, v);
      } else {
        const char *s = json_object_get_string(o);
        emit_text(e, s, strlen(s));
      }
      break;
    case json_type_double: {
      const char *s = json_object_get_string(o); /* the text as written (json-c keeps it) */
      if (e->spec->is_int) {
        int64_t v;
        if (json_number_int(s, strlen(s), &v) == ST_OK) emit_int(e, v);
      } else {
        emit_text(e, s, strlen(s));
      }
      break;
    }
    case json_type_boolean:
      if (!e->spec->is_int)
        emit_text(e, json_object_get_boolean(o) ? "true" : "false",
                  json_object_get_boolean(o) ? 4 : 5);
      break;
    case json_type_null:
      if (!e->spec->is_int) emit_text(e, "null", 4);
      break;
    default: /* objects, and arrays inside arrays */
      break;
  }
}

/* A value read as JSON once, for every json: attribute of an extraction: by json_scan when it
   keeps to its subset, else by json-c. */
typedef enum { DOC_UNREAD, DOC_SCANNED, DOC_JSONC, DOC_NONE } doc_state_t;
typedef struct json_doc {
  doc_state_t state;
  bool reference;    /* json-c only (attr_extract_reference) */
  json_object *root; /* DOC_JSONC: owned */
  json_scan_t scan;  /* DOC_SCANNED */
} json_doc_t;

/* Reads v[0, len) into *d, once. ST_OK (DOC_NONE: not JSON, no term), ST_E_UNSUPPORTED or
   ST_E_NOMEM. */
static int doc_read(json_doc_t *d, const char *v, size_t len) {
  if (d->state != DOC_UNREAD) return ST_OK;
  if (!d->reference && json_scan_read(v, len, &d->scan)) {
    d->state = DOC_SCANNED;
    return ST_OK;
  }
  if (jsonc_api_bind(NULL) != ST_OK) return ST_E_UNSUPPORTED; /* libjson-c5 not installed */
  json_tokener *tok = thread_tokener();
  if (!tok) return ST_E_NOMEM;
  d->state = DOC_NONE;
  if (len > (size_t)INT32_MAX) return ST_OK;
  json_tokener_reset(tok);
  json_object *root = json_tokener_parse_ex(tok, v, (int)len);
  if (!root) return ST_OK; /* not JSON, or JSON cut short (json-c would wait for more) */
  if (json_tokener_get_parse_end(tok) != len) { /* something after the value */
    json_object_put(root);
    return ST_OK;
  }
  d->root = root;
  d->state = DOC_JSONC;
  return ST_OK;
}

static void doc_release(json_doc_t *d) {
  if (d->state == DOC_JSONC) json_object_put(d->root);
}

static void jsonc_walk(emit_t *e, json_object *root) {
  /* json-c's null is a NULL object: `found` tells it from a missing key */
  json_object *o = root;
  bool found = true;
  const char *key = e->spec->keys;
  for (uint32_t i = 0; i < e->spec->nkeys && found; i++, key += strlen(key) + 1)
    found = json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &o);
  if (found && json_object_is_type(o, json_type_array)) {
    size_t n = json_object_array_length(o);
    for (size_t i = 0; i < n && !e->stop; i++) json_term(e, json_object_array_get_idx(o, i));
  } else if (found) {
    json_term(e, o);
  }
}

/* json_term's rules on a scanned token (an integer's text is canonical, so it is the term
   json-c gives, and under :int it reads as json-c's int64). */
static void scan_term(emit_t *e, const char *v, const json_scan_token_t *t) {
  switch (t->type) {
    case JSON_SCAN_STRING:
    case JSON_SCAN_INT:
      emit_text(e, v + t->text, t->len);
      break;
    case JSON_SCAN_TRUE:
      if (!e->spec->is_int) emit_text(e, "true", 4);
      break;
    case JSON_SCAN_FALSE:
      if (!e->spec->is_int) emit_text(e, "false", 5);
      break;
    case JSON_SCAN_NULL:
      if (!e->spec->is_int) emit_text(e, "null", 4);
      break;
    default: /* objects, and arrays inside arrays */
      break;
  }
}

static void scan_walk(emit_t *e, const json_scan_t *s, const char *v) {
  int at = 0;
  const char *key = e->spec->keys;
  for (uint32_t i = 0; i < e->spec->nkeys && at >= 0; i++, key += strlen(key) + 1)
    at = s->tok[at].type == JSON_SCAN_OBJECT
             ? json_scan_member(s, v, (uint32_t)at, key, strlen(key))
             : -1;
  if (at < 0) return;
  const json_scan_token_t *t = &s->tok[at];
  if (t->type != JSON_SCAN_ARRAY) {
    scan_term(e, v, t);
    return;
  }
  for (uint32_t c = (uint32_t)at + 1; c < t->next && !e->stop; c = s->tok[c].next)
    scan_term(e, v, &s->tok[c]);
}

static int extract_json(emit_t *e, json_doc_t *d, const char *v, size_t len) {
  int rc = doc_read(d, v, len);
  if (rc != ST_OK) return rc;
  if (d->state == DOC_SCANNED) scan_walk(e, &d->scan, v);
  if (d->state == DOC_JSONC) jsonc_walk(e, d->root);
  return e->terms;
}

/* CSV/TSV: finds field `want` (from 1) of the first record of v[0, len) with separator sep,
   checking the whole record. 1 and [*start, *end) for an unquoted field, or the quoted
   field's content with its "" not yet undone (*quoted = true); 0 if the record has fewer
   fields; -1 if it is malformed. */
static int csv_field(const char *v, size_t len, char sep, uint32_t want, size_t *start, size_t *end,
                     bool *quoted) {
  size_t i = 0;
  uint32_t field = 1;
  int found = 0;
  for (;;) {
    size_t s, t;
    bool q = i < len && v[i] == '"';
    if (q) {
      s = ++i;
      for (;;) {
        if (i == len) return -1; /* the quote never closes */
        if (v[i] == '"') {
          if (i + 1 < len && v[i + 1] == '"') {
            i += 2;
            continue;
          }
          break;
        }
        i++;
      }
      t = i++;
    } else {
      s = i;
      while (i < len && v[i] != sep && v[i] != '\n' &&
             !(v[i] == '\r' && i + 1 < len && v[i + 1] == '\n')) {
        if (v[i] == '"') return -1; /* a quote inside an unquoted field */
        i++;
      }
      t = i;
    }
    if (field == want) {
      *start = s;
      *end = t;
      *quoted = q;
      found = 1;
    }
    if (i == len || v[i] == '\n' || (v[i] == '\r' && i + 1 < len && v[i + 1] == '\n'))
      return found;             /* the record's end */
    if (v[i] != sep) return -1; /* text after a closing quote */
    i++;
    field++;
  }
}

/* Copies a quoted field's content src[0, n) to dst, each "" as one quote; returns the bytes
   written. */
static size_t unquote(char *dst, const char *src, size_t n) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    dst[w++] = src[i];
    if (src[i] == '"') i++;
  }
  return w;
}

static int extract_csv(emit_t *e, const char *v, size_t len, char sep) {
  size_t s, t;
  bool quoted;
  if (csv_field(v, len, sep, e->spec->field, &s, &t, &quoted) != 1) return 0;
  if (!quoted || !memchr(v + s, '"', t - s)) {
    emit_text(e, v + s, t - s);
    return e->terms;
  }
  char small[256] = {0}; /* zeroed: gcc cannot see that unquote writes what emit_text reads */
  char *buf = t - s <= sizeof small ? small : malloc(t - s);
  if (!buf) return ST_E_NOMEM;
  emit_text(e, buf, unquote(buf, v + s, t - s));
  if (buf != small) free(buf);
  return e->terms;
}

/* One attribute's terms; the JSON of the value read through d. */
static int extract_one(emit_t *e, json_doc_t *d, const char *v, size_t len) {
  const attr_spec_t *spec = e->spec;
  switch (spec->kind) {
    case ATTR_JSON:
      return extract_json(e, d, v, len);
    case ATTR_CSV:
      return extract_csv(e, v, len, ',');
    case ATTR_TSV:
      return extract_csv(e, v, len, '\t');
    case ATTR_BYTES:
      if (spec->offset > len || spec->length > len - spec->offset) return 0;
      emit_text(e, v + spec->offset, spec->length);
      return e->terms;
    case ATTR_VALUE:
      emit_text(e, v, len);
      return e->terms;
    case ATTR_PAIR: /* made of its members' terms by query/terms.h */
      return 0;
  }
  return 0;
}

static int extract_each(const attr_spec_t *specs, size_t n, const void *value, size_t len,
                        attr_each_fn fn, void *arg, uint32_t *counts, bool reference) {
  json_doc_t d;
  d.state = DOC_UNREAD;
  d.reference = reference;
  int rc = ST_OK;
  for (size_t i = 0; i < n && rc >= 0; i++) {
    emit_t e = {&specs[i], i, fn, arg, 0, false};
    rc = extract_one(&e, &d, value, len);
    if (rc >= 0 && counts) counts[i] = (uint32_t)rc;
    if (e.stop) break;
  }
  doc_release(&d);
  return rc < 0 ? rc : ST_OK;
}

int attr_extract_each(const attr_spec_t *specs, size_t n, const void *value, size_t len,
                      attr_each_fn fn, void *arg, uint32_t *counts) {
  return extract_each(specs, n, value, len, fn, arg, counts, false);
}

/* attr_extract's callback under attr_extract_each's. */
typedef struct one_fn {
  attr_term_fn fn;
  void *arg;
} one_fn_t;

static int call_one(void *arg, size_t attr, const void *term, size_t len) {
  (void)attr;
  const one_fn_t *o = arg;
  return o->fn(o->arg, term, len);
}

static int extract_single(const attr_spec_t *spec, const void *value, size_t len, attr_term_fn fn,
                          void *arg, bool reference) {
  one_fn_t o = {fn, arg};
  uint32_t count = 0;
  int rc = extract_each(spec, 1, value, len, call_one, &o, &count, reference);
  return rc < 0 ? rc : (int)count;
}

int attr_extract(const attr_spec_t *spec, const void *value, size_t len, attr_term_fn fn,
                 void *arg) {
  return extract_single(spec, value, len, fn, arg, false);
}

int attr_extract_reference(const attr_spec_t *spec, const void *value, size_t len, attr_term_fn fn,
                           void *arg) {
  return extract_single(spec, value, len, fn, arg, true);
}

/* ---- The stored list ---- */

static bool has_pair(const attr_spec_t *specs, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (specs[i].kind == ATTR_PAIR) return true;
  return false;
}

int attr_specs_encode(const attr_spec_t *specs, size_t n, uint8_t **out, size_t *out_len,
                      err_t *err) {
  *out = NULL;
  *out_len = 0;
  size_t cap = 1 + VARINT32_MAX_BYTES + 4;
  char **decls = calloc(n ? n : 1, sizeof *decls);
  if (!decls) return err_set(err, ST_E_NOMEM, "attributes: out of memory");
  int rc = ST_OK;
  for (size_t i = 0; i < n && rc == ST_OK; i++) {
    size_t dl = attr_spec_format(&specs[i], NULL, 0);
    decls[i] = malloc(dl + 1);
    if (!decls[i]) {
      rc = err_set(err, ST_E_NOMEM, "attributes: out of memory");
      break;
    }
    attr_spec_format(&specs[i], decls[i], dl + 1);
    cap += VARINT32_MAX_BYTES + dl;
  }
  uint8_t *buf = rc == ST_OK ? malloc(cap) : NULL;
  if (rc == ST_OK && !buf) rc = err_set(err, ST_E_NOMEM, "attributes: out of memory");
  if (rc == ST_OK) {
    uint8_t *p = buf;
    *p++ = (uint8_t)(has_pair(specs, n) ? ATTR_SPECS_VERSION_PAIR : ATTR_SPECS_VERSION);
    p = encode_varint32(p, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
      size_t dl = strlen(decls[i]);
      p = encode_varint32(p, (uint32_t)dl);
      memcpy(p, decls[i], dl);
      p += dl;
    }
    encode_fixed32(p, crc32c_mask(crc32c_value(buf, (size_t)(p - buf))));
    p += 4;
    *out = buf;
    *out_len = (size_t)(p - buf);
  }
  for (size_t i = 0; i < n; i++) free(decls[i]);
  free(decls);
  return rc;
}

void attr_specs_free(attr_spec_t *specs, size_t n) {
  if (!specs) return;
  for (size_t i = 0; i < n; i++) attr_spec_release(&specs[i]);
  free(specs);
}

int attr_specs_decode(const uint8_t *data, size_t len, const char *what, attr_spec_t **out,
                      size_t *n, err_t *err) {
  *out = NULL;
  *n = 0;
  if (len < 1 + 1 + 4)
    return err_set(err, ST_E_CORRUPT, "%s: %zu bytes, too short for a list of attributes", what,
                   len);
  size_t body = len - 4;
  if (crc32c_unmask(decode_fixed32(data + body)) != crc32c_value(data, body))
    return err_set(err, ST_E_CORRUPT, "%s: checksum mismatch at offset %zu", what, body);
  if (data[0] != ATTR_SPECS_VERSION && data[0] != ATTR_SPECS_VERSION_PAIR)
    return err_set(err, ST_E_UNSUPPORTED, "%s: version %u at offset 0, this build reads %u and %u",
                   what, data[0], ATTR_SPECS_VERSION, ATTR_SPECS_VERSION_PAIR);
  const uint8_t *p = data + 1, *limit = data + body;
  uint32_t count;
  p = decode_varint32(p, limit, &count);
  if (!p) return err_set(err, ST_E_CORRUPT, "%s: bad count at offset 1", what);
  if (count > (size_t)(limit - p)) /* each declaration takes a byte at least */
    return err_set(err, ST_E_CORRUPT, "%s: %u attributes at offset 1 in %zu bytes", what, count,
                   (size_t)(limit - p));
  attr_spec_t *specs = calloc(count ? count : 1, sizeof *specs);
  if (!specs) return err_set(err, ST_E_NOMEM, "%s: out of memory", what);
  int rc = ST_OK;
  size_t done = 0;
  char decl[ATTR_MAX_DECL_BYTES + 1];
  for (; done < count; done++) {
    size_t at = (size_t)(p - data);
    uint32_t dl;
    const uint8_t *q = decode_varint32(p, limit, &dl);
    if (!q || dl > (size_t)(limit - q) || dl > ATTR_MAX_DECL_BYTES) {
      rc =
          err_set(err, ST_E_CORRUPT, "%s: attribute %zu at offset %zu: bad length", what, done, at);
      break;
    }
    memcpy(decl, q, dl);
    decl[dl] = '\0';
    err_t perr;
    int prc = memchr(q, 0, dl) ? ST_E_INVALID : attr_spec_parse(decl, &specs[done], &perr);
    if (prc == ST_E_NOMEM) {
      rc = err_set(err, ST_E_NOMEM, "%s: out of memory", what);
      break;
    }
    if (prc != ST_OK) {
      rc = err_set(err, ST_E_CORRUPT, "%s: attribute %zu at offset %zu: %s", what, done, at,
                   memchr(q, 0, dl) ? "a NUL byte in the declaration" : perr.msg);
      break;
    }
    p = q + dl;
  }
  if (rc == ST_OK && p != limit)
    rc = err_set(err, ST_E_CORRUPT, "%s: %zu bytes after the last attribute, at offset %zu", what,
                 (size_t)(limit - p), (size_t)(p - data));
  /* A composite only in the version that says so; its members as attr_specs_check wants. */
  if (rc == ST_OK && has_pair(specs, count) != (data[0] == ATTR_SPECS_VERSION_PAIR))
    rc = err_set(err, ST_E_CORRUPT, "%s: version %u at offset 0 with%s a composite", what, data[0],
                 data[0] == ATTR_SPECS_VERSION_PAIR ? "out" : "");
  err_t cerr;
  if (rc == ST_OK && attr_specs_check(specs, count, &cerr) != ST_OK)
    rc = err_set(err, ST_E_CORRUPT, "%s: %s", what, cerr.msg);
  if (rc != ST_OK) {
    attr_specs_free(specs, done);
    return rc;
  }
  *out = count ? specs : NULL;
  if (!count) free(specs);
  *n = count;
  return ST_OK;
}
