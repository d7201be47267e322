/* The text form of keys and values (cli_kv.h): escaping, and the CSV/TSV record reader. */
#include "tools/bfh/cli_kv.h"

#include <stdlib.h>
#include <string.h>

static int needs_escape(unsigned char c, int first) {
  return c < 0x20 || c >= 0x7f || c == '\\' || (first && c == '#');
}

/* The text of byte c in the escaped form, into buf (NUL-terminated). */
static void escape_byte(unsigned char c, int first, char buf[5]) {
  if (!needs_escape(c, first)) {
    buf[0] = (char)c;
    buf[1] = 0;
    return;
  }
  switch (c) {
    case '\\':
      strcpy(buf, "\\\\");
      return;
    case '\n':
      strcpy(buf, "\\n");
      return;
    case '\t':
      strcpy(buf, "\\t");
      return;
    case '\r':
      strcpy(buf, "\\r");
      return;
    case '\0':
      strcpy(buf, "\\0");
      return;
    default:
      snprintf(buf, 5, "\\x%02x", c);
  }
}

void cli_kv_write_field(FILE *out, const void *data, size_t n, int csv_quote) {
  const unsigned char *p = data;
  int quote = csv_quote && (memchr(p, ',', n) || memchr(p, '"', n));
  if (quote) fputc('"', out);
  for (size_t i = 0; i < n; i++) {
    char buf[5];
    escape_byte(p[i], i == 0, buf);
    fputs(quote && p[i] == '"' ? "\"\"" : buf, out);
  }
  if (quote) fputc('"', out);
}

void cli_kv_write_json(FILE *out, const void *data, size_t n) {
  const unsigned char *p = data;
  fputc('"', out);
  for (size_t i = 0; i < n; i++) {
    char buf[5];
    escape_byte(p[i], i == 0, buf);
    for (const char *b = buf; *b; b++) {
      if (*b == '"' || *b == '\\') fputc('\\', out);
      fputc(*b, out);
    }
  }
  fputc('"', out);
}

void cli_kv_write_record(FILE *out, cli_kv_format_t fmt, const void *key, size_t klen,
                         const void *val, size_t vlen) {
  int csv = fmt == CLI_KV_CSV;
  cli_kv_write_field(out, key, klen, csv);
  fputc(csv ? ',' : '\t', out);
  cli_kv_write_field(out, val, vlen, csv);
  fputc('\n', out);
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The byte that the escape starting at s[i] (a backslash) stands for; *used its length. */
static int unescape_one(const char *s, size_t n, size_t i, size_t *used) {
  *used = 2;
  if (i + 1 >= n) return -1;
  switch (s[i + 1]) {
    case '\\':
      return '\\';
    case 'n':
      return '\n';
    case 't':
      return '\t';
    case 'r':
      return '\r';
    case '0':
      return '\0';
    case 'x': {
      int hi = i + 3 < n ? hex_digit(s[i + 2]) : -1, lo = hi >= 0 ? hex_digit(s[i + 3]) : -1;
      *used = 4;
      return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
    }
    default:
      return -1;
  }
}

int cli_kv_unescape(char *s, size_t *n, const char **why) {
  size_t out = 0;
  for (size_t i = 0; i < *n;) {
    if (s[i] != '\\') {
      s[out++] = s[i++];
      continue;
    }
    size_t used;
    int c = unescape_one(s, *n, i, &used);
    if (c < 0) {
      *why = "bad escape (use \\\\ \\n \\t \\r \\0 or \\xHH)";
      return -1;
    }
    s[out++] = (char)c;
    i += used;
  }
  *n = out;
  return 0;
}

void cli_kv_reader_init(cli_kv_reader_t *r, FILE *in, cli_kv_format_t fmt) {
  memset(r, 0, sizeof *r);
  r->in = in;
  r->fmt = fmt;
  r->next_line = 1;
}

void cli_kv_reader_release(cli_kv_reader_t *r) {
  free(r->key);
  free(r->val);
  memset(r, 0, sizeof *r);
}

static int append(char **buf, size_t *len, size_t *cap, int c) {
  if (*len == *cap) {
    size_t ncap = *cap ? 2 * *cap : 64;
    char *nb = realloc(*buf, ncap);
    if (!nb) return -1;
    *buf = nb;
    *cap = ncap;
  }
  (*buf)[(*len)++] = (char)c;
  return 0;
}

/* What ended a field: the separator, the end of the line, or the end of the input. */
enum { END_SEP, END_LINE, END_EOF, END_BAD };

/* After a field's text: '\r' is dropped before '\n'. */
static int field_end(cli_kv_reader_t *r, int c, int sep) {
  if (c == '\r') {
    c = getc(r->in);
    if (c != '\n') {
      r->why = "carriage return not followed by a line feed";
      return END_BAD;
    }
  }
  if (c == sep) return END_SEP;
  if (c == '\n') {
    r->next_line++;
    return END_LINE;
  }
  if (c == EOF) return END_EOF;
  r->why = "stray character after a closing quote";
  return END_BAD;
}

static int read_quoted(cli_kv_reader_t *r, char **buf, size_t *len, size_t *cap) {
  for (;;) {
    int c = getc(r->in);
    if (c == EOF) {
      r->why = "quoted field not closed before the end of the input";
      return END_BAD;
    }
    if (c == '"') {
      c = getc(r->in);
      if (c != '"') return field_end(r, c, ',');
    }
    if (c == '\n') r->next_line++;
    if (append(buf, len, cap, c) != 0) {
      r->why = "out of memory";
      return END_BAD;
    }
  }
}

/* Reads one field (raw, escapes not decoded yet) into *buf. */
static int read_field(cli_kv_reader_t *r, char **buf, size_t *len, size_t *cap) {
  int sep = r->fmt == CLI_KV_CSV ? ',' : '\t';
  *len = 0;
  int c = getc(r->in);
  if (r->fmt == CLI_KV_CSV && c == '"') return read_quoted(r, buf, len, cap);
  for (;; c = getc(r->in)) {
    if (c == sep || c == '\n' || c == '\r' || c == EOF) return field_end(r, c, sep);
    if (r->fmt == CLI_KV_CSV && c == '"') {
      r->why = "quote inside an unquoted field (enclose the field in quotes, double the quote)";
      return END_BAD;
    }
    if (append(buf, len, cap, c) != 0) {
      r->why = "out of memory";
      return END_BAD;
    }
  }
}

static int decode(cli_kv_reader_t *r, char *s, size_t *n) {
  return cli_kv_unescape(s, n, &r->why);
}

int cli_kv_reader_next(cli_kv_reader_t *r) {
  int c;
  while ((c = getc(r->in)) == '\n') r->next_line++; /* blank lines hold no record */
  if (c == EOF) return 0;
  ungetc(c, r->in);
  r->line = r->next_line;
  int end = read_field(r, &r->key, &r->klen, &r->kcap);
  if (end == END_BAD) return -1;
  if (end != END_SEP) {
    r->why = "one field, expected two (key and value)";
    return -1;
  }
  end = read_field(r, &r->val, &r->vlen, &r->vcap);
  if (end == END_BAD) return -1;
  if (end == END_SEP) {
    r->why = "more than two fields (a separator in the data must be quoted or escaped)";
    return -1;
  }
  if (decode(r, r->key, &r->klen) != 0 || decode(r, r->val, &r->vlen) != 0) return -1;
  return 1;
}
