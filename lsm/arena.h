/* arena_t: bump allocation for the memtable. Memory is freed all at once by
 * arena_release(). Allocation is single-threaded (the memtable's writer);
 * arena_memory_usage() may be read from any thread. Caller-owned struct.
 */
#ifndef BFH_LSM_ARENA_H
#define BFH_LSM_ARENA_H

#include <stdatomic.h>
#include <stddef.h>

#define ARENA_BLOCK_BYTES 65536

typedef struct arena {
  char *ptr;        /* next free byte of the current block */
  size_t remaining; /* bytes left in the current block */
  void **blocks;    /* every block allocated (owned) */
  size_t nblocks, cap;
  atomic_size_t usage; /* bytes of blocks + block table */
} arena_t;

void arena_init(arena_t *a);
/* Frees every block. */
void arena_release(arena_t *a);
/* n bytes (n > 0) aligned to 8 (pointer/atomic alignment); NULL on no memory. Valid until
   arena_release. */
void *arena_alloc_aligned(arena_t *a, size_t n);
size_t arena_memory_usage(const arena_t *a);
/* Bytes handed out so far, with the alignment slop and the tails of blocks left behind, but
   not the unused rest of the current block: what the entries take, however small the blocks
   are next to it. REQUIRES: the allocating thread (reads the current block's remainder). */
size_t arena_bytes_used(const arena_t *a);

#endif
