/* json_scan: a JSON object read without allocating, in one pass, for the json:PATH extractor
 * (query/attr.c), when it keeps to a plain subset of JSON whose reading by json-c is known.
 *
 * json-c builds a document of heap objects for every value and sets up a locale per parse:
 * about 1 to 3 us for a small object, paid at every put and again at every table write
 * (doc/query.md "Why json-c"). Most values a database holds are plain: this scanner reads
 * those into an array of tokens on the caller's stack, and says "not mine" for anything else,
 * which attr.c then gives to json-c. It never judges a value invalid itself, so the terms of
 * a value are json-c's terms whichever reader read it (tests/query/json_scan_test.c and
 * fuzz_attr compare the two on every value the scanner takes).
 *
 * The subset, a value the scanner takes:
 *   - an object at offset 0, ending at the value's last byte (no whitespace before or after);
 *   - between tokens, only spaces (0x20), any number of them;
 *   - strings (keys too) of bytes 0x20..0x7e but '"' and '\': no escape, no control byte, no
 *     byte above 0x7e (so no UTF-8 question arises);
 *   - numbers that are integers in canonical form: -?(0|[1-9][0-9]*), at most 18 digits, not
 *     "-0" (no fraction, no exponent: json-c keeps a double's text, an integer's value, and
 *     "-0" reads "0");
 *   - true, false, null;
 *   - objects and arrays nested at most JSON_SCAN_MAX_DEPTH deep, JSON_SCAN_MAX_TOKENS
 *     tokens in all.
 * Keys may repeat (the path reads the last, as json-c does).
 */
#ifndef BFH_QUERY_JSON_SCAN_H
#define BFH_QUERY_JSON_SCAN_H

#include <stddef.h>
#include <stdint.h>

#define JSON_SCAN_MAX_TOKENS 128
#define JSON_SCAN_MAX_DEPTH 16

typedef enum json_scan_type {
  JSON_SCAN_OBJECT,
  JSON_SCAN_ARRAY,
  JSON_SCAN_STRING, /* text: the content between the quotes */
  JSON_SCAN_INT,    /* text: the digits as written (canonical) */
  JSON_SCAN_TRUE,
  JSON_SCAN_FALSE,
  JSON_SCAN_NULL
} json_scan_type_t;

typedef struct json_scan_token {
  uint8_t type;          /* json_scan_type_t */
  uint16_t next;         /* the index one past this token's subtree (its next sibling's) */
  uint32_t text, len;    /* offset and length in the value: a scalar's text */
  uint32_t key, key_len; /* a member of an object: its key's content; else 0, 0 */
} json_scan_token_t;

/* A value's tokens in document order: [0] is the object; a container's children follow it,
   each with its subtree, up to its .next. Caller-owned (on the stack: about 2.5 KiB). */
typedef struct json_scan {
  json_scan_token_t tok[JSON_SCAN_MAX_TOKENS];
  uint32_t n;
} json_scan_t;

/* Reads v[0, len) into *out: 1 if the value keeps to the subset above (then out holds its
   tokens, pointing into v), 0 if it does not (nothing said about whether it is JSON). */
int json_scan_read(const char *v, size_t len, json_scan_t *out);

/* The member called key[0, key_len) of the object at tok[obj] (its last, if the key repeats):
   its token's index, or -1. */
int json_scan_member(const json_scan_t *s, const char *v, uint32_t obj, const char *key,
                     size_t key_len);

#endif
