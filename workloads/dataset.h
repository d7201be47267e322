/* dataset: real records for the workloads, read from files that Debian packages install
 * (scripts/install-deps.sh installs them; nothing is downloaded).
 *
 *   words    wamerican-insane's /usr/share/dict/american-english-insane, one word a line:
 *            key "w<line>", value {"word":"<the word>","len":<its bytes>,"initial":"<its
 *            first byte, lower-cased>"}: equality, prefixes and string ranges over words,
 *            a small skewed domain in "initial" and "len".
 *   oui      ieee-data's /usr/share/ieee-data/oui.csv, one assignment a record (RFC 4180,
 *            header skipped): key "o<assignment>", value the CSV record as written
 *            (Registry,Assignment,Organization Name,Organization Address): a skewed value
 *            domain, a few vendors holding hundreds of blocks each. A record whose
 *            assignment an earlier one has is skipped (the registry lists two twice).
 *   unicode  unicode-data's /usr/share/unicode/UnicodeData.txt, one code point a line (';'
 *            separated): key "u<code point, hex>", value {"cp":<code point>,"name":"...",
 *            "cat":"Lu","ccc":<int>,"bidi":"L"}: several attributes, two of them ints.
 *   wordnet  wordnet-base's /usr/share/wordnet/data.noun, one noun synset a line (wndb(5),
 *            the license lines skipped): key "n<synset offset>", value {"word":"<first
 *            word>","words":[<every word>],"lex":<lexicographer file>,"ptrs":<pointers>,
 *            "gloss":"<definition>"}: a document-sized value (about 200 bytes), a
 *            multi-valued attribute (words) and a small int domain (lex, 26 values).
 * dataset_attrs names each set's attributes in bfh's --attr form (doc/query.md).
 *
 * A dataset is read whole into memory (the largest, words, is 663k records, about 40 MiB).
 * Records past the file's count repeat it: record i is record i mod count with the cycle
 * number appended to its key ("w12.3"), so that a workload of any size has distinct keys and
 * the file's own value distribution.
 *
 * Parsing is done from memory (dataset_parse), so that a fuzz target can feed it any bytes:
 * a line a parser cannot read, or one whose key an earlier record has, is skipped and
 * counted, never an error.
 */
#ifndef BFH_WORKLOADS_DATASET_H
#define BFH_WORKLOADS_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef enum dataset_kind {
  DATASET_WORDS = 0,
  DATASET_OUI = 1,
  DATASET_UNICODE = 2,
  DATASET_WORDNET = 3,
} dataset_kind_t;

#define DATASET_KINDS 4
#define DATASET_MAX_KEY 48

typedef struct dataset dataset_t;

/* "words", "oui", "unicode", "wordnet"; the kind for a name (ST_OK) or ST_E_INVALID. */
const char *dataset_name(dataset_kind_t kind);
int dataset_kind_parse(const char *name, dataset_kind_t *kind);
/* The file a kind is read from, and the Debian package that installs it. */
const char *dataset_default_path(dataset_kind_t kind);
const char *dataset_package(dataset_kind_t kind);
/* The kind's attribute declarations (NAME=EXTRACTOR, static strings) and their count. */
const char *const *dataset_attrs(dataset_kind_t kind, size_t *n);

/* Reads path (NULL: dataset_default_path) into *out, the caller's (dataset_destroy).
   ST_E_IO naming the file and its package when it cannot be read, ST_E_INVALID when it holds
   no record, ST_E_NOMEM. */
int dataset_open(dataset_kind_t kind, const char *path, dataset_t **out, err_t *err);
/* Parses data[0, len) as a file of kind into *out, the caller's. ST_OK (possibly with no
   record), ST_E_NOMEM. */
int dataset_parse(dataset_kind_t kind, const char *data, size_t len, dataset_t **out,
                  err_t *err);
void dataset_destroy(dataset_t *d); /* NULL is allowed */

/* Records the file held, and lines or records it skipped as unreadable. */
uint64_t dataset_count(const dataset_t *d);
uint64_t dataset_skipped(const dataset_t *d);

/* Record i (any i: past the count it repeats, above): its key written into key (at most
   DATASET_MAX_KEY bytes, *key_len), its value borrowed from d (valid while d is). */
void dataset_record(const dataset_t *d, uint64_t i, char key[DATASET_MAX_KEY], size_t *key_len,
                    const char **val, size_t *val_len);

#endif /* BFH_WORKLOADS_DATASET_H */
