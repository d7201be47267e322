/* The authors' cost profile (`bfh run --costs authors`): the paper's searches as the authors'
 * public code performs them, for the experiment drivers only (doc/costs.md).
 *
 *   scan              every table file of the database directory is read whole; each entry
 *                     is decoded, formatted as a text line ('key' @ seq : val => 'value') and
 *                     parsed back into a key and a value string, the records of a table are
 *                     gathered in a growing array, copied once more, and compared one by one
 *   classical Bloom   every table's leaf filter is loaded from a file of its own
 *   scan (LEAVES)     (<db>/authors-leaves/NNNNNN.bloom: a 4-byte k, then m bits, bit i in
 *                     byte i/8 at bit i%8), turned into a bitset one bit at a time, then
 *                     probed; a table whose leaf says maybe is read as the scan reads it
 *   hierarchy         the internal nodes in memory; every leaf the search reaches is loaded
 *                     from its file as above, probed, and its table read as the scan reads it
 *
 * The leaf files are written when the profile is opened on a database (untimed, the authors'
 * "create the Bloom filters" phase): each table is read and its values added to an m-bit
 * filter with the database's k and seed, the same filter bfh keeps for it. The code that
 * reproduces the costs is compiled without optimisation (the authors build theirs with
 * `g++ -g`, no -O flag); the table reads beneath it are the library's, optimised, as the
 * authors' LevelDB library is. Own engine only.
 */
#ifndef BFH_EXPERIMENTS_EXP_AUTHORS_H
#define BFH_EXPERIMENTS_EXP_AUTHORS_H

#include <stddef.h>
#include <stdint.h>

#include "bfh.h"

typedef struct exp_authors exp_authors_t;

/* Opens the profile on the closed own-engine database in dir (m bits, k hashes, the
   database's hash seed; a hierarchy of order d with the given bfh_placement over its leaves):
   lists the table files, writes the missing leaf files, builds the internal nodes. On BFH_OK
   *out is new (exp_authors_close). Prints the error on stderr otherwise. */
int exp_authors_open(const char *dir, uint64_t m, uint32_t k, uint64_t seed, uint32_t d,
                     int placement, exp_authors_t **out);
void exp_authors_close(exp_authors_t *a); /* NULL allowed */

/* One search for val by BFH_SEARCH_SCAN, _LEAVES or _HIERARCHY (others: BFH_E_INVALID) with
   the authors' costs. st gets the counters bfh_search fills (results: the entries whose value
   is val; the authors' code validates no key); fn (NULL: none) gets the key of each of them,
   as bfh_search's (its return value is ignored: the authors' search reads every table it
   chose). BFH_OK or the failing status (printed). */
int exp_authors_search(exp_authors_t *a, const void *val, size_t len, bfh_method method,
                       bfh_match_fn fn, void *arg, bfh_search_stats *st);

#endif
