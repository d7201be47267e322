/* The text form of keys and values on the command line: what `bfh scan` writes, `bfh load
 * --from` reads and `bfh get` / `bfh search` print, so that any byte string round-trips.
 *
 * Escapes (both formats, on output and on input): \\ \n \t \r \0 and \xHH (two hex digits)
 * stand for one byte each. Output escapes every byte outside printable ASCII, the backslash,
 * and a '#' that starts a field (so that no output line looks like a comment); every other
 * byte is itself. Input takes any other byte as itself; a backslash followed by anything
 * else is an error.
 *
 * CSV (RFC 4180): two fields per record, separated by a comma, records ended by LF or CRLF.
 * A field may be enclosed in double quotes; inside, "" is one quote, and commas and line
 * breaks are data. The escapes apply to a field after its quotes are removed. Output quotes
 * a field that holds a comma or a quote (a line break is always written \n).
 * TSV: two fields separated by one tab, records ended by LF (or CRLF); no quoting, so a tab
 * or line break in the data must be written \t or \n.
 */
#ifndef BFH_TOOLS_BFH_CLI_KV_H
#define BFH_TOOLS_BFH_CLI_KV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum cli_kv_format { CLI_KV_CSV = 0, CLI_KV_TSV = 1 } cli_kv_format_t;

/* Writes the escaped form of data[0, n) to out; with csv_quote, encloses it in quotes
   (doubling those inside) when it holds a comma or a quote. */
void cli_kv_write_field(FILE *out, const void *data, size_t n, int csv_quote);
/* Writes the escaped form of data[0, n) as a JSON string: the escaped text, with its
   backslashes and quotes escaped again for JSON (all ASCII, whatever the bytes). */
void cli_kv_write_json(FILE *out, const void *data, size_t n);
/* Writes "key,value\n" (CSV) or "key\tvalue\n" (TSV). */
void cli_kv_write_record(FILE *out, cli_kv_format_t fmt, const void *key, size_t klen,
                         const void *val, size_t vlen);

/* Decodes the escapes of s[0, *n) in place; *n becomes the decoded length. Returns 0, or -1
   with a message in why (static text) for a bad escape. */
int cli_kv_unescape(char *s, size_t *n, const char **why);

/* A reader of key,value records from a stream. */
typedef struct cli_kv_reader {
  FILE *in; /* borrowed */
  cli_kv_format_t fmt;
  uint64_t line;      /* the line the last record started on (1-based) */
  uint64_t next_line; /* the line the next record starts on */
  char *key, *val;    /* the last record, decoded; owned by the reader */
  size_t klen, vlen;
  size_t kcap, vcap;
  const char *why; /* what was wrong with a bad record (static text) */
} cli_kv_reader_t;

void cli_kv_reader_init(cli_kv_reader_t *r, FILE *in, cli_kv_format_t fmt);
void cli_kv_reader_release(cli_kv_reader_t *r);
/* Reads the next record into r->key/r->val. Returns 1, 0 at the end of the input, or -1 for
   a bad record (r->why says why, r->line where it starts). */
int cli_kv_reader_next(cli_kv_reader_t *r);

#endif
