/* write_batch_t: a group of puts and deletes applied atomically; its encoding is the
 * payload of one log record (doc/format.md "Write batch"):
 *
 *   seq fixed64 | count fixed32 | count records:
 *     LSM_TYPE_VALUE (1)    u8 | varint32 key_len | key | varint32 val_len | val
 *     LSM_TYPE_DELETION (0) u8 | varint32 key_len | key
 *
 * Record i gets sequence number seq + i. Caller-owned struct: write_batch_init() /
 * write_batch_release(). Not thread-safe.
 */
#ifndef BFH_LSM_WRITE_BATCH_H
#define BFH_LSM_WRITE_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define WRITE_BATCH_HEADER_BYTES 12

struct memtable;

typedef struct write_batch {
  uint8_t *rep; /* encoding: header + records (owned) */
  size_t size, cap;
} write_batch_t;

/* An empty batch (seq 0, count 0). Never fails: the buffer is allocated on first use. */
void write_batch_init(write_batch_t *b);
void write_batch_release(write_batch_t *b);
/* Back to empty (keeps the buffer). */
void write_batch_clear(write_batch_t *b);

/* ST_OK or ST_E_NOMEM (b unchanged then). key and val are copied. */
int write_batch_put(write_batch_t *b, const void *key, size_t klen, const void *val, size_t vlen);
int write_batch_delete(write_batch_t *b, const void *key, size_t klen);
/* Appends src's records to dst (group commit); dst keeps its seq. */
int write_batch_append(write_batch_t *dst, const write_batch_t *src);

uint32_t write_batch_count(const write_batch_t *b);
uint64_t write_batch_seq(const write_batch_t *b);
void write_batch_set_seq(write_batch_t *b, uint64_t seq);
/* The encoding (borrowed; valid until b changes). */
const uint8_t *write_batch_data(const write_batch_t *b, size_t *n);
/* Replaces b's contents by a copy of an encoding (e.g. a log record). ST_E_CORRUPT
   (no message) if n < 12; the records are checked by write_batch_iterate. */
int write_batch_set_data(write_batch_t *b, const void *data, size_t n);

/* Called for every record in order; return nonzero to stop (write_batch_iterate then
   returns that value). key/val are borrowed from the encoding. */
typedef int (*write_batch_fn)(void *arg, uint64_t seq, int type, const void *key, size_t klen,
                              const void *val, size_t vlen);
/* Decodes an encoding. ST_E_CORRUPT with "write batch: ..." if it is malformed or its
   record count differs from the header. */
int write_batch_iterate(const void *data, size_t n, write_batch_fn fn, void *arg, err_t *err);
/* memtable_add() of every record (REQUIRES: the caller is the memtable's single writer).
   ST_E_CORRUPT as write_batch_iterate, ST_E_NOMEM. */
int write_batch_insert(const void *data, size_t n, struct memtable *m, err_t *err);

#endif
