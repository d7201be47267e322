/* range_filter: a static filter for ranges of 64-bit codes, one per table, the last check
 * after the value filters in memory (issue 48).
 *
 * It follows Grafite (Costa, Ferragina and Vinciguerra, "Grafite: Taming Adversarial Queries
 * with Optimal Range Filters", SIGMOD 2024), written here from the paper. A code x goes to
 *     h(x) = (q(x >> range_log2) + x) mod r,      r = n * 2^(bits_per_key - 2),
 * q a seeded hash of x's block of L = 2^range_log2 codes into [0, r). Within a block h only
 * shifts (mod r), so it keeps locality: the codes of a range inside one block go to one run
 * of h values (two, when it wraps past r), and a range of at most L codes touches at most two
 * blocks. The set h(S) of the n codes is kept sorted in an Elias-Fano list, about
 * bits_per_key bits per code. A range query asks whether h(S) meets those runs.
 *
 * A range that holds a code of S is always "maybe". An empty range of at most L codes is a
 * false positive with probability at most L / 2^(bits_per_key - 2), whatever the range and
 * however it is placed, right beside a present code included: the bound does not depend on
 * the query distribution, which is what lets a per-table check meet a fixed rate under
 * correlated queries. Longer ranges are asked block by block (at most RANGE_FILTER_MAX_BLOCKS
 * blocks, then "maybe").
 *
 * The encoding (little-endian, varints as util/coding.h), kept with its table:
 *   version u8 (1) | range_log2 u8 | bits_per_key u8 | seed fixed64 | n varint64 |
 *   low words, ceil(n * low_bits / 64) fixed64 | high words, ceil((n + (r >> low_bits) + 1)
 *   / 64) fixed64 | crc32c fixed32 (masked, over every byte before it)
 * with r and low_bits computed from n and bits_per_key. A decode checks the checksum, the
 * lengths, and that the list never descends and stays below r (two codes may share an h
 * value: the list keeps both, n being the count r is made from).
 *
 * Split in two (range_filter_encode_head and _body), the filter keeps only its high bits in
 * memory (about 2 bits per code, and the select samples) and reads the low bits of the few
 * codes a range may meet from its body, stored with the table: a range whose runs of h
 * values fall in buckets of the high bits that hold no code is answered from memory, and any
 * other reads one piece of the body (rarely two). With bits_per_key = 20 a table keeps about
 * 3 of its 20 bits per code in memory (the high bits and their select samples). The head
 * alone says no where the buckets of the high bits that a range's h values fall in hold no
 * code: for an empty range of L codes placed uniformly, about e^-2 of the time (it mostly
 * meets two blocks, each bucket empty with probability 1/e); for one right beside a code,
 * almost never (its h values lie right beside the code's), so such a range reads a piece.
 *   head: version u8 (2) | range_log2 u8 | bits_per_key u8 | seed fixed64 | n varint64 |
 *         high words (as above) | crc32c fixed32 (masked, over every byte before it)
 *   body: piece p, for p from 0, holds the low bits of codes [p P, (p + 1) P) of the list
 *         (P = RANGE_FILTER_PIECE; the last piece the rest), packed from bit 0 of its words:
 *         ceil(codes x low_bits / 64) fixed64 | crc32c fixed32 (masked, over fixed32 p and
 *         the words); every piece but the last has range_filter_piece_bytes bytes.
 *
 * A range_filter_t is read-only after it is built or decoded: any number of threads may
 * query it at once.
 */
#ifndef BFH_FILTERS_RANGE_FILTER_H
#define BFH_FILTERS_RANGE_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define RANGE_FILTER_VERSION 1u
#define RANGE_FILTER_HEAD_VERSION 2u
#define RANGE_FILTER_PIECE 256u /* codes whose low bits make one piece of the body */
#define RANGE_FILTER_MIN_BITS 3u
#define RANGE_FILTER_MAX_BITS 40u
#define RANGE_FILTER_MAX_LOG2 40u   /* largest L = 2^range_log2 */
#define RANGE_FILTER_MAX_BLOCKS 64u /* blocks of L asked for one range before "maybe" */

typedef struct range_filter range_filter_t;

/* Builds a filter over codes[0, n) (any order, repeats allowed) for ranges of up to
   2^range_log2 codes at bits_per_key bits per distinct code. *out is the caller's, freed with
   range_filter_destroy. ST_E_INVALID (bits_per_key outside MIN..MAX_BITS, range_log2 above
   MAX_LOG2, n * 2^(bits_per_key - 2) above 2^62), ST_E_NOMEM. */
int range_filter_build(const uint64_t *codes, size_t n, unsigned bits_per_key, unsigned range_log2,
                       uint64_t seed, range_filter_t **out, err_t *err);
void range_filter_destroy(range_filter_t *f); /* NULL is allowed */

/* 0 when no code of [lo, hi] (lo <= hi) was given to the build; 1 when one may have been. */
int range_filter_may_contain(const range_filter_t *f, uint64_t lo, uint64_t hi);

/* The distinct codes held and the bytes the filter takes in memory. */
uint64_t range_filter_count(const range_filter_t *f);
size_t range_filter_memory(const range_filter_t *f);

/* The encoding: range_filter_encoded_size bytes, written by range_filter_encode into out. */
size_t range_filter_encoded_size(const range_filter_t *f);
void range_filter_encode(const range_filter_t *f, uint8_t *out);
/* Decodes data[0, len) into *out (the caller's). ST_E_CORRUPT with what is wrong and at which
   offset of data (the caller adds the file and its offset), ST_E_NOMEM. */
int range_filter_decode(const uint8_t *data, size_t len, range_filter_t **out, err_t *err);

/* ---- Split: the head in memory, the body read per range ------------------------------ */
/* Reads len bytes at off of the filter's body into buf: ST_OK, or an error with a message. */
typedef int (*range_filter_read_fn)(void *arg, uint64_t off, size_t len, void *buf, err_t *err);

/* The head and the body of a whole filter (one built, or decoded whole: range_filter_whole;
   the body of a filter decoded from its head cannot be encoded). */
size_t range_filter_head_size(const range_filter_t *f);
void range_filter_encode_head(const range_filter_t *f, uint8_t *out);
size_t range_filter_body_size(const range_filter_t *f);
void range_filter_encode_body(const range_filter_t *f, uint8_t *out);
/* The bytes of every piece of the body but the last. */
size_t range_filter_piece_bytes(const range_filter_t *f);

/* Decodes a head into *out (the caller's): a filter whose low bits are read from its body by
   range_filter_ask. ST_E_CORRUPT with what is wrong and at which offset of data (checksum,
   version, parameters, a count with more than one encoding, the high words' length, a high
   bit past the list's end or a number of ones other than the count), ST_E_NOMEM. */
int range_filter_decode_head(const uint8_t *data, size_t len, range_filter_t **out, err_t *err);
/* 1 if f holds its low bits (built, or decoded whole); 0 if it was decoded from its head. */
int range_filter_whole(const range_filter_t *f);

/* As range_filter_may_contain, for a filter of either kind: one decoded from its head reads
   the pieces of its body the range needs through read (none when its high bits rule the range
   out; "maybe" without reading when read is NULL). 0: no code of [lo, hi]; 1: maybe; or an
   error: the read's, or ST_E_CORRUPT when a piece does not check out (naming the piece and
   its offset in the body). *pieces_read (may be NULL) counts the pieces read. */
int range_filter_ask(const range_filter_t *f, uint64_t lo, uint64_t hi, range_filter_read_fn read,
                     void *arg, uint64_t *pieces_read, err_t *err);
/* Reads every piece of the body of a filter decoded from its head and checks it as a range
   would, and that the codes never descend and stay below r (bfh check): ST_OK, the read's error, or
   ST_E_CORRUPT naming the first piece that does not check out and its offset in the body. */
int range_filter_verify_body(const range_filter_t *f, range_filter_read_fn read, void *arg,
                             err_t *err);

#endif /* BFH_FILTERS_RANGE_FILTER_H */
