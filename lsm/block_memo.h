/* block_memo_t: data blocks one reader keeps for a while, by (table number, block index).
 *
 * A search by value reads the few data blocks its block filters name and finds its candidate
 * keys there; validating each candidate is then a get of its latest version, which, when no
 * newer table or memtable holds the key, ends in the very block the scan just read. The scan
 * keeps the blocks it found a match in here, and the gets of the same search parse them from
 * here instead of reading and checking them from the file a second time (lsm_snapshot_t keeps
 * one per snapshot: lsm_snapshot_get_latest). The matches that are the first entry of their
 * key in the table are also found by (table number, key): a get that reaches that table takes
 * such a match as its answer before it tests the table's key filter or searches its index.
 *
 * Why the kept bytes are the file's: a table file is written once and never changed, its
 * number is never given to another file in the process's lifetime (file numbers only grow),
 * and a block is kept only after its CRC was checked in the buffer it is copied from. The
 * memo's owner holds a version that references every table whose blocks it keeps, so none
 * of those files is deleted meanwhile. So a get that would read block i of table n finds
 * exactly the bytes a read would give.
 *
 * Threads: one thread at a time. Memory: at most BLOCK_MEMO_MAX_BYTES of block bytes; past
 * that, blocks are not kept (gets read them as before). init / release; the blocks are owned
 * by the memo.
 */
#ifndef BFH_LSM_BLOCK_MEMO_H
#define BFH_LSM_BLOCK_MEMO_H

#include <stddef.h>
#include <stdint.h>

#define BLOCK_MEMO_MAX_BYTES (8u << 20)

/* A matching entry of a kept block that is the first entry of its user key in the table
   (the entry before it in the block has another user key): its table's newest version of
   that key (table_get_kept says why). */
typedef struct block_memo_match {
  uint8_t *user_key; /* owned */
  size_t user_len;
  uint64_t seq;
  uint32_t val_off, val_len; /* the value: data[val_off, val_off + val_len) */
} block_memo_match_t;

typedef struct block_memo_slot {
  uint64_t number; /* table number; 0: empty slot (table numbers start at 1) */
  uint32_t index;  /* data block index in the table */
  uint32_t size;   /* block contents bytes (no trailer); 0 unless whole */
  int whole;       /* data is the block's contents; 0: only the matches' values */
  uint8_t *data;   /* owned */
  block_memo_match_t *matches; /* owned; nmatches of them */
  size_t nmatches;
} block_memo_slot_t;

/* Where a kept match is found by its key (block_memo_first). */
typedef struct block_memo_key {
  uint64_t number; /* table number; 0: empty */
  uint64_t hash;   /* blocked_filter_key_hash of the user key */
  const block_memo_match_t *match; /* in its slot's matches (which never move) */
  const uint8_t *data;             /* its slot's data */
} block_memo_key_t;

typedef struct block_memo {
  block_memo_slot_t *slots;
  size_t cap, n; /* cap: 0 or a power of two */
  block_memo_key_t *keys; /* every kept match, by (table, key) */
  size_t kcap, kn;        /* kcap: 0 or a power of two */
  size_t bytes;  /* block bytes held */
  uint64_t hits;   /* lookups answered */
  uint64_t direct; /* gets answered by a kept match without a seek (table_get_kept) */
} block_memo_t;

void block_memo_init(block_memo_t *m);
void block_memo_release(block_memo_t *m);

/* Keeps a copy of the checked contents (size bytes, trailer excluded) of block index of table
   number, and of its first-of-their-key matches[0, n) (their keys are copied), unless it is
   kept already or the memo is full. Never fails: a block not kept is only read again. */
void block_memo_put(block_memo_t *m, uint64_t number, uint32_t index, const uint8_t *data,
                    size_t size, const block_memo_match_t *matches, size_t n);

/* The same, keeping only the values of matches[0, n) (a slot that is not whole): enough for
   the gets of those keys, which need no seek; any other get of the block reads it. For a
   block whose every match is the first entry of its key, so that no get of the search seeks
   in it: it saves copying the block. */
void block_memo_put_values(block_memo_t *m, uint64_t number, uint32_t index, const uint8_t *data,
                           size_t size, const block_memo_match_t *matches, size_t n);

/* The kept block index of table number (borrowed until release), or NULL. */
const block_memo_slot_t *block_memo_get(block_memo_t *m, uint64_t number, uint32_t index);

/* The kept match of table number whose user key is key (len bytes; key_hash: its
   blocked_filter_key_hash, which a get has computed already), or NULL; *val: where its value's
   bytes are kept. A get of key in that table needs neither its filter nor its index: the match
   is the table's newest version of key (table_get_kept). */
const block_memo_match_t *block_memo_first(block_memo_t *m, uint64_t number, const void *key,
                                           size_t len, uint64_t key_hash, const uint8_t **val);

#endif
