/* mem_filter_t: a key Bloom filter beside each memtable, so that a get for a key the
 * memtable does not hold skips the skiplist search (the common case: most keys live in
 * tables). It uses the same key hash as the table key filters (blocked_filter_key_hash),
 * so a get still hashes its key once for every filter it probes.
 *
 * Layout in memory only (never written to disk): nblocks cache-line blocks of 8 64-bit
 * words; a hash picks a block with its high 32 bits and MEM_FILTER_PROBES bits inside it
 * by double hashing of its low bits.
 *
 * Threads: one writer (the memtable's writer) and any number of lock-free readers; words
 * are atomics, so a reader sees each bit either before or after it is set. A reader that
 * synchronized with the writer after an add (the db mutex) sees the add.
 * Lifetime: reference counted like the memtable it sits beside.
 */
#ifndef BFH_LSM_MEM_FILTER_H
#define BFH_LSM_MEM_FILTER_H

#include <stddef.h>
#include <stdint.h>

#define MEM_FILTER_PROBES 6

typedef struct mem_filter mem_filter_t;

/* A filter of about `bits` bits (rounded up to whole 512-bit blocks), one reference.
   NULL on no memory. */
mem_filter_t *mem_filter_create(size_t bits);
void mem_filter_ref(mem_filter_t *f);
void mem_filter_unref(mem_filter_t *f); /* frees at zero; NULL allowed */

/* REQUIRES: a single writer. */
void mem_filter_add(mem_filter_t *f, uint64_t hash);
/* 0: no key with this hash was added; 1: maybe. */
int mem_filter_may_contain(const mem_filter_t *f, uint64_t hash);

#endif
