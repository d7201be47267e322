/* attr: attributes, a name and an extractor applied to each value (issue 47, doc/query.md).
 *
 * A declaration is "NAME=EXTRACTOR[:int]" (the CLI's --attr NAME=EXTRACTOR):
 *   NAME       [A-Za-z_][A-Za-z0-9_]*, 1 to ATTR_NAME_MAX_BYTES bytes
 *   json:PATH  a field of a JSON object value; PATH is dotted (address.city), its segments
 *              non-empty and without '.' or ':' (they are the keys, byte for byte)
 *   csv:N      the N-th field (from 1, at most ATTR_MAX_FIELD) of the value read as one
 *   tsv:N      RFC 4180 record, fields separated by ',' (csv) or a tab (tsv)
 *   bytes:OFF:LEN  the LEN bytes (LEN >= 1) at offset OFF (decimal, at most UINT32_MAX each)
 *   value      the whole value
 *   pair:A,B   a composite of the declared attributes A and B (doc/query.md "Composites"):
 *              its terms are pairs, one per term a of A and b of B (attr_pair_term), which a
 *              search asks where an AND holds equalities on both A and B. A and B are declared
 *              in the same list, distinct, and not composites (attr_specs_check); no :int or
 *              :range follows. A value whose pairs would number more than ATTR_PAIR_MAX_TERMS
 *              is indexed under the one overflow term (the empty pair) instead, so that a
 *              search that asks "the pair's term or the overflow term" stays exact.
 *   :int       the attribute is a signed 64-bit integer: its terms are attr_int_term's 8 bytes
 *   :range[=J,J,...]  each term is also indexed under range items (query/range_cover.h) at the
 *              stored levels J (ascending, 1..63, at most RANGE_MAX_LEVELS), so that ranges
 *              and prefixes are answered through the filters; without a list, the default
 *              levels (attr_range_default), written out in the canonical form so that a
 *              stored declaration keeps its levels whatever the default becomes
 *
 * Terms. attr_extract gives each value's terms for one attribute; a value gives none when it
 * lacks the field, is not valid JSON or CSV, is too short for bytes:OFF:LEN, or (under :int)
 * is not an integer in range. That is never an error: the caller counts it.
 *   JSON (as json-c reads it in strict mode, whichever of bfh's readers reads it: RFC 8259,
 *     except that NaN, Infinity, -Infinity and "1." read as numbers and "-01" as -1; nesting at
 *     most JSON_TOKENER_DEFAULT_DEPTH = 32 deep): the path walks objects only (an array or a
 *     scalar on the way: no term; a key that repeats: its last value). At the path's end:
 *       a string     its content, unescaped, as UTF-8 bytes (\u0000 included)
 *       a number     its text as written ("1.50", "1e3"), except an integer, whose term is
 *                    its decimal form: "-0" reads "0", and one beyond the 64-bit range reads
 *                    as the bound json-c saturates it to (-9223372036854775808 or
 *                    18446744073709551615)
 *       true, false, null   "true", "false", "null"
 *       an object    no term
 *       an array     each element its own term by the rules above (an object or an array
 *                    inside it: none); a duplicate element is reported each time it appears
 *   CSV and TSV (RFC 4180): only the first record counts; it ends at LF or CRLF outside quotes
 *     (a CR elsewhere is data). A field that starts with '"' is quoted: it runs to the next
 *     '"' not doubled, "" inside stands for ", and it may hold separators and line ends; the
 *     closing quote must be followed by the separator, the record's end or the value's end.
 *     A '"' inside an unquoted field, or a quote never closed, makes the record malformed:
 *     no term, whichever field is asked. TSV quotes as CSV does (what spreadsheets and
 *     Python's excel-tab dialect write); a field with no quote reads the same as under IANA's
 *     text/tab-separated-values. A field may be empty: its term is empty (none under :int).
 *   bytes:OFF:LEN  value[OFF, OFF+LEN) if the value holds it.
 *   value      the value, empty or not.
 *   :int       the text extracted above must read as attr_int_parse reads it (an optional
 *     sign, decimal digits, leading zeros allowed, no spaces, in the int64 range), so that
 *     "007", "7" and "+7" are one term. A JSON number is an integer when its exact value is
 *     (7, 7.0, 1e3, 2.5e1); 7.5 and 1e-3 give no term; true, false and null give none.
 *
 * Specs are caller-owned structs (init by attr_spec_parse, attr_spec_release); attr_extract
 * only reads one, so threads may share it.
 */
#ifndef BFH_QUERY_ATTR_H
#define BFH_QUERY_ATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query/range_cover.h"
#include "util/err.h"

#define ATTR_NAME_MAX_BYTES 64
#define ATTR_MAX_FIELD 65536
#define ATTR_MAX_DECL_BYTES 4096 /* a declaration, name and extractor */
#define ATTR_INT_TERM_BYTES 8

typedef enum attr_kind {
  ATTR_VALUE = 0, /* value */
  ATTR_JSON = 1,  /* json:PATH */
  ATTR_CSV = 2,   /* csv:N */
  ATTR_TSV = 3,   /* tsv:N */
  ATTR_BYTES = 4, /* bytes:OFF:LEN */
  ATTR_PAIR = 5   /* pair:A,B (its terms are made by query/terms.h, not extracted) */
} attr_kind_t;

/* The most pairs one value is indexed under for one composite (ATTR_PAIR), and the most a
   search asks for one AND: beyond, the value takes the overflow term, the search no pairs. */
#define ATTR_PAIR_MAX_TERMS 256

typedef struct attr_spec {
  char name[ATTR_NAME_MAX_BYTES + 1]; /* NUL-terminated */
  attr_kind_t kind;
  bool is_int;     /* :int */
  uint32_t field;  /* csv, tsv: the field, from 1 */
  uint32_t offset; /* bytes: */
  uint32_t length; /*   >= 1 */
  char *path;      /* json: the dotted path as declared (owned) */
  char *keys;      /* json: its segments, each NUL-terminated, one after the other (owned) */
  uint32_t nkeys;  /* json: how many */
  char member[2][ATTR_NAME_MAX_BYTES + 1]; /* pair: A and B, NUL-terminated */
  range_levels_t range; /* :range: the stored levels (n 0: no range items); has_zero is
                           is_int, an :int term being its own level-0 item */
} attr_spec_t;

/* The levels `:range` stands for without a list. :int: every 4 bits up to 24, so that a range
   of up to 2^24 codes costs at most 2 x 15 probes per level (range_cover.h) and its top
   level a few more; text: every byte up to 56, so that a prefix of 1 to 7 bytes is exactly
   one aligned interval, one probe. doc/query.md "Ranges" says why. */
void attr_range_default(bool is_int, range_levels_t *out);

/* Parses decl, a NUL-terminated declaration "NAME=EXTRACTOR[:int]", into *out (which the
   caller releases with attr_spec_release once this returned ST_OK; on failure *out holds
   nothing to release). ST_OK, ST_E_INVALID with a message naming the declaration and the
   column (from 1) where parsing stopped ("attribute 'x=csv:0': column 7: a field number
   counts from 1"), or ST_E_NOMEM. */
int attr_spec_parse(const char *decl, attr_spec_t *out, err_t *err);
/* Frees what *spec owns (spec may be NULL, or released already). */
void attr_spec_release(attr_spec_t *spec);
/* Writes spec's declaration in its canonical form (no leading zeros; what attr_spec_parse
   reads back to the same spec) into buf (cap bytes, NUL-terminated, cut short if cap is
   too small). Returns its length without the NUL, as snprintf does. */
size_t attr_spec_format(const attr_spec_t *spec, char *buf, size_t cap);

/* Checks what one declaration cannot: each composite of specs[0, n) names two members declared
   in the list, distinct, neither a composite. ST_OK, or ST_E_INVALID naming the composite and
   what is wrong ("attribute 'city_age=pair:city,agee': agee is not declared"). */
int attr_specs_check(const attr_spec_t *specs, size_t n, err_t *err);

/* A composite's term for the pair (a[0, alen), b[0, blen)): varint64(alen) | a | b, so that
   no two pairs share one (the length says where a ends) and none is empty, the overflow
   term. Writes attr_pair_term_bytes(alen, blen) bytes to out; returns that count. */
#define ATTR_PAIR_OVERFLOW_TERM "" /* the overflow term: the empty pair, length 0 */
size_t attr_pair_term_bytes(size_t alen, size_t blen);
size_t attr_pair_term(const void *a, size_t alen, const void *b, size_t blen, uint8_t *out);

/* Called once per term: term[0, term_len) is borrowed for the call only. A nonzero return
   stops the extraction. */
typedef int (*attr_term_fn)(void *arg, const void *term, size_t term_len);

/* Extracts the terms of value[0, len) for spec and calls fn(arg, term, term_len) for each.
   Returns the number of terms reported (0: the value has no term for this attribute; when fn
   stopped the extraction, the terms reported up to and including that call), ST_E_NOMEM, or
   for a json:PATH attribute ST_E_UNSUPPORTED when libjson-c5 cannot be loaded (json-c is
   bound at the first JSON extraction, util/json_api.h); nothing else is an error. A composite
   (pair:) gives no term here: its pairs are its members' (query/terms.h). json-c does not
   tell its out-of-memory from bad input: a JSON value it could not allocate for gives no term.
   Thread-safe: each thread parses JSON with a tokener of its own, made at its first JSON extraction
   and freed when it exits. */
int attr_extract(const attr_spec_t *spec, const void *value, size_t len, attr_term_fn fn,
                 void *arg);

/* Called once per term of the attribute specs[attr] of an attr_extract_each: term[0, term_len)
   is borrowed for the call only. A nonzero return stops the extraction, of every attribute. */
typedef int (*attr_each_fn)(void *arg, size_t attr, const void *term, size_t term_len);

/* attr_extract for each of specs[0, n) in turn, over one reading of the value: JSON is read
   once for every json: attribute (by query/json_scan.h when the value keeps to its plain
   subset, else by json-c), the cost a put pays once per value. counts (may be NULL) gets
   counts[i], the terms reported for specs[i]. ST_OK, or attr_extract's errors (the
   attributes before the failing one have been reported). Thread-safe as attr_extract. */
int attr_extract_each(const attr_spec_t *specs, size_t n, const void *value, size_t len,
                      attr_each_fn fn, void *arg, uint32_t *counts);

/* attr_extract with JSON always read by json-c, never by the scanner: the reference the
   scanner is held to (tests/query/json_scan_test.c, fuzz_attr). */
int attr_extract_reference(const attr_spec_t *spec, const void *value, size_t len, attr_term_fn fn,
                           void *arg);

/* Reads text[0, len) as a signed 64-bit integer: an optional '+' or '-', then one or more
   decimal digits (leading zeros allowed), nothing else (no spaces). ST_OK and *out, or
   ST_E_INVALID (also when out of the int64 range), with no message. */
int attr_int_parse(const char *text, size_t len, int64_t *out);
/* An :int attribute's term for v: 8 bytes, big-endian, sign bit flipped, so that the terms'
   byte order (memcmp) is the integers' order. */
void attr_int_term(int64_t v, uint8_t out[ATTR_INT_TERM_BYTES]);

/* A list of specs as stored with a database (little-endian, varints as util/coding.h):
 *   version u8 (1, or 2 when the list declares a composite) | count varint32 | count x (length varint32 | declaration bytes,
 *   attr_spec_format's canonical form) | crc32c fixed32 (masked, over every byte before it)
 * The declarations are stored as text, so that a stored attribute is read by the parser the
 * CLI's --attr goes through and means what it meant when declared.
 */
#define ATTR_SPECS_VERSION 1u
/* The version of a list that declares a composite (pair:), so that a build that predates
   composites refuses it as a newer version (ST_E_UNSUPPORTED) instead of reading its pairs
   as no attribute at all; a list without one is still written as version 1. */
#define ATTR_SPECS_VERSION_PAIR 2u

/* Encodes specs[0, n) into *out, a malloc'd buffer of *out_len bytes that the caller frees.
   ST_OK or ST_E_NOMEM. */
int attr_specs_encode(const attr_spec_t *specs, size_t n, uint8_t **out, size_t *out_len,
                      err_t *err);
/* Decodes data[0, len), read from `what` (named in messages, e.g. a file's path), into *out,
   an array of *n specs (NULL when 0) the caller frees with attr_specs_free. ST_OK;
   ST_E_CORRUPT with the offset of the damage (checksum, a length past the end, a
   declaration that does not parse, a composite in a version 1 list or one attr_specs_check
   refuses, trailing bytes); ST_E_UNSUPPORTED for a newer version;
   ST_E_NOMEM. */
int attr_specs_decode(const uint8_t *data, size_t len, const char *what, attr_spec_t **out,
                      size_t *n, err_t *err);
/* Releases specs[0, n) and frees the array (NULL is fine). */
void attr_specs_free(attr_spec_t *specs, size_t n);

#endif
