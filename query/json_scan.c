/* json_scan: the plain subset of JSON read in one pass; see json_scan.h. */
#include "query/json_scan.h"

#include <stdbool.h>
#include <string.h>

typedef struct scanner {
  const char *v;
  size_t len, i;
  json_scan_t *out;
} scanner_t;

static void skip_spaces(scanner_t *s) {
  while (s->i < s->len && s->v[s->i] == ' ') s->i++;
}

static int peek(const scanner_t *s) {
  return s->i < s->len ? (unsigned char)s->v[s->i] : -1;
}

/* A string at s->i (its opening quote): *start and *n its content. */
static bool scan_string(scanner_t *s, uint32_t *start, uint32_t *n) {
  size_t i = s->i + 1, b = i;
  for (; i < s->len; i++) {
    unsigned char c = (unsigned char)s->v[i];
    if (c == '"') break;
    if (c < 0x20 || c > 0x7e || c == '\\') return false;
  }
  if (i == s->len) return false;
  *start = (uint32_t)b;
  *n = (uint32_t)(i - b);
  s->i = i + 1;
  return true;
}

/* A token that must be followed by a space, ',', '}' or ']' (within the object, never its
   end: the value ends with the object's '}'). */
static bool delimited(const scanner_t *s) {
  int c = peek(s);
  return c == ' ' || c == ',' || c == '}' || c == ']';
}

static bool scan_int(scanner_t *s, uint32_t *start, uint32_t *n) {
  size_t i = s->i, b = i;
  if (s->v[i] == '-') i++;
  size_t d = i;
  while (i < s->len && s->v[i] >= '0' && s->v[i] <= '9') i++;
  size_t digits = i - d;
  if (digits == 0 || digits > 18) return false;
  if (s->v[d] == '0' && (digits > 1 || d > b)) return false; /* a leading zero, or "-0" */
  s->i = i;
  *start = (uint32_t)b;
  *n = (uint32_t)(i - b);
  return delimited(s);
}

static bool scan_word(scanner_t *s, const char *w, size_t n) {
  if (s->len - s->i < n || memcmp(s->v + s->i, w, n) != 0) return false;
  s->i += n;
  return delimited(s);
}

static bool scan_value(scanner_t *s, int depth, uint32_t key, uint32_t key_len);

/* The members or elements of the container whose opening byte is at s->i, up to its close. */
static bool scan_children(scanner_t *s, int depth, bool object) {
  char close = object ? '}' : ']';
  s->i++;
  skip_spaces(s);
  if (peek(s) == close) {
    s->i++;
    return true;
  }
  for (;;) {
    uint32_t key = 0, key_len = 0;
    if (object) {
      if (peek(s) != '"' || !scan_string(s, &key, &key_len)) return false;
      skip_spaces(s);
      if (peek(s) != ':') return false;
      s->i++;
      skip_spaces(s);
    }
    if (!scan_value(s, depth + 1, key, key_len)) return false;
    skip_spaces(s);
    int c = peek(s);
    s->i++;
    if (c == close) return true;
    if (c != ',') return false;
    skip_spaces(s);
  }
}

static bool scan_value(scanner_t *s, int depth, uint32_t key, uint32_t key_len) {
  json_scan_t *o = s->out;
  if (o->n == JSON_SCAN_MAX_TOKENS || depth > JSON_SCAN_MAX_DEPTH) return false;
  uint32_t at = o->n++;
  json_scan_token_t *t = &o->tok[at];
  t->key = key;
  t->key_len = key_len;
  t->text = t->len = 0;
  bool ok;
  switch (peek(s)) {
    case '{':
      t->type = JSON_SCAN_OBJECT;
      ok = scan_children(s, depth, true);
      break;
    case '[':
      t->type = JSON_SCAN_ARRAY;
      ok = scan_children(s, depth, false);
      break;
    case '"':
      t->type = JSON_SCAN_STRING;
      ok = scan_string(s, &t->text, &t->len) && delimited(s);
      break;
    case 't':
      t->type = JSON_SCAN_TRUE;
      ok = scan_word(s, "true", 4);
      break;
    case 'f':
      t->type = JSON_SCAN_FALSE;
      ok = scan_word(s, "false", 5);
      break;
    case 'n':
      t->type = JSON_SCAN_NULL;
      ok = scan_word(s, "null", 4);
      break;
    default:
      t->type = JSON_SCAN_INT;
      ok = (peek(s) == '-' || (peek(s) >= '0' && peek(s) <= '9')) && scan_int(s, &t->text, &t->len);
      break;
  }
  o->tok[at].next = (uint16_t)o->n; /* t may not be written to before this: same slot */
  return ok;
}

int json_scan_read(const char *v, size_t len, json_scan_t *out) {
  out->n = 0;
  if (len == 0 || len > UINT32_MAX || v[0] != '{') return 0;
  scanner_t s = {v, len, 0, out};
  return scan_value(&s, 1, 0, 0) && s.i == len;
}

int json_scan_member(const json_scan_t *s, const char *v, uint32_t obj, const char *key,
                     size_t key_len) {
  int found = -1;
  for (uint32_t c = obj + 1; c < s->tok[obj].next; c = s->tok[c].next)
    if (s->tok[c].key_len == key_len && memcmp(v + s->tok[c].key, key, key_len) == 0)
      found = (int)c;
  return found;
}
