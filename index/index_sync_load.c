/* index_sync_t's loading at open: the block filters of the tables marked to be read, ahead of
 * their leaves (index_sync_load_blocks), and the background loader that reads the leaves a
 * few tables at a time. See index_sync.h "Loading at open" and doc/search.md "Open cost".
 *
 * A table whose block filter is in the block index but whose leaf is not in the value index
 * yet is selected by every filter method (value_index_select scans a table it has no leaf
 * for) and then read through its block filter: only the blocks that may hold the value. So a
 * search issued while the leaves load costs one block-filter probe per such table, never a
 * full scan, and never misses an entry: the block filter covers every entry of its table
 * (filters/block_filter.h), and it was verified by its checksum when read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "bfh.h"
#include "index/index_sync_private.h"
#include "util/clock.h"

/* Tables read per loader step: a step is what a stop or a search may wait for. */
#define LOADER_STEP_TABLES 2
/* The bytes the leaves read hold before they enter the index together (at least one leaf):
   all of an open's leaves up to this bound. Each entry of leaves into the bit-sliced index
   touches every one of its rows, so entering them together costs a fraction of entering them
   one by one; and the lean layout plans its fold groups over the leaves it enters together
   (value_index.c, plan_folds_locked): one plan over all of them is the tightest, and the same
   at every open, where batches of a few tables each gave folds that changed with the order the
   two threads read them in (at 10M entries 1.86-2.03 bytes per entry, doc/search.md "One plan
   per open"); and a group planned once is allocated once, where a later batch re-lays its
   rows (old and new at once: at 100M, 1,253 tables in five batches, the open's peak was 1.8x
   the index). Whole leaves (m / 8 bytes each: about 268 of 2,000,000 bits) reach it at 20M-odd
   entries; in the lean layout a leaf whose filter lies in a file waits as its chunk CRCs only
   (value_index_leaf_make, 1/128 of its words: doc/search.md "Folding while reading"), so all
   of an open's leaves enter in one batch. A search meanwhile enters what was read. */
#define LOADER_APPLY_BYTES (64u << 20)

/* ---- Block filters ahead of the leaves ------------------------------------------------- */

int index_sync_load_blocks(index_sync_t *s, err_t *err) {
  const value_index_params_t *p = value_index_params(s->index);
  if (!p->block_bits) return BFH_OK;
  /* Without read_blocks (the sidecar cache holds the leaf and the block filter in one file,
     bound to the table by its tag): both are read now, the leaf parked. */
  if (!s->src.read_blocks) return index_sync_run_parking(s, err);
  pthread_mutex_lock(&s->run_mu);
  pthread_mutex_lock(&s->mu);
  u64vec_t todo;
  u64vec_init(&todo);
  int rc = BFH_OK;
  for (size_t i = 0; i < s->n && rc == BFH_OK; i++) {
    const record_t *r = &s->recs[i];
    /* A table the persisted index answers for needs no block filter read now: its map head
       comes from that file when a search selects it (persisted_index.h). */
    if (r->state == REC_TO_READ && !r->gone_epoch && !r->early_blocks &&
        !value_index_persisted_covers(s->index, r->number))
      rc = u64vec_push(&todo, r->number);
  }
  pthread_mutex_unlock(&s->mu);
  if (rc != BFH_OK) {
    u64vec_release(&todo);
    pthread_mutex_unlock(&s->run_mu);
    return err_set(err, rc, "index sync: out of memory");
  }
  for (size_t i = 0; i < todo.n; i++) {
    block_filter_t *bf = NULL;
    err_t e;
    err_clear(&e);
    uint64_t t0 = clock_now_ns();
    int r = s->src.read_blocks(s->src.ctx, todo.v[i], p, &bf, &e);
    pthread_mutex_lock(&s->mu);
    s->stats.read_ns += clock_now_ns() - t0;
    record_t *rec = index_sync_find(s, todo.v[i]);
    /* Only a table still waiting for its leaf takes it (runs are serialized by run_mu, so
       no leaf arrived meanwhile; a table gone meanwhile does not take it). */
    if (r == BFH_OK && bf && rec && rec->state == REC_TO_READ && !rec->gone_epoch) {
      /* The block index takes bf, and frees it if it cannot keep it (no memory: the table
         is read whole until its leaf comes). */
      if (block_index_put(value_index_blocks(s->index), rec->number, bf) == BFH_OK) {
        rec->early_blocks = 1;
        s->stats.blocks_early++;
      }
      bf = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    block_filter_destroy(bf);
  }
  u64vec_release(&todo);
  pthread_mutex_unlock(&s->run_mu);
  return BFH_OK;
}

/* ---- The loader ------------------------------------------------------------------------- */

static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static int held;

void index_sync_test_hold_loaders(int hold) {
  pthread_mutex_lock(&hold_mu);
  held = hold;
  pthread_cond_broadcast(&hold_cv);
  pthread_mutex_unlock(&hold_mu);
}

/* Notes whether the loader is settled (index_sync_private.h). REQUIRES load_mu held. */
static void loader_settle(index_sync_t *s) {
  const int settled =
      !s->loader_armed && !s->loader_running && s->loader_rc == BFH_OK && s->searches >= 2;
  atomic_store_explicit(&s->loader_settled, settled, memory_order_release);
}

static int stopping(index_sync_t *s) {
  pthread_mutex_lock(&s->load_mu);
  int stop = s->loader_stop;
  pthread_mutex_unlock(&s->load_mu);
  return stop;
}

/* Waits while the test hook holds loaders; returns whether s is stopping. The stop wakes it:
   index_sync_loader_stop broadcasts hold_cv. */
static int wait_hold(index_sync_t *s) {
  pthread_mutex_lock(&hold_mu);
  while (held && !stopping(s)) pthread_cond_wait(&hold_cv, &hold_mu);
  pthread_mutex_unlock(&hold_mu);
  return stopping(s);
}

/* The number of tables still to be read (their leaves not in the index). */
static size_t count_to_read(index_sync_t *s) {
  size_t n = 0;
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->n; i++) n += s->recs[i].state == REC_TO_READ && !s->recs[i].gone_epoch;
  pthread_mutex_unlock(&s->mu);
  return n;
}

/* One loading step: reads up to LOADER_STEP_TABLES tables (*ran of them) and lets the leaves
   queued (by this thread and any other loading beside it) enter the index when they hold
   LOADER_APPLY_BYTES or nothing is left to read. A paper-placement tree is rebuilt only
   then, once (a search meanwhile rebuilds it itself): a rebuild after every step would cost
   O(B^2) in all. */
static int load_step(index_sync_t *s, size_t *ran, err_t *err) {
  *ran = 0;
  int rc = index_sync_run_some(s, INDEX_RUN_ALL, 0, LOADER_STEP_TABLES, ran, err);
  /* Not when stopping: the close that stops it (a one-shot search from the shell) would wait
     for the whole entry, which it drops anyway. */
  if (rc == BFH_OK && (*ran == 0 || value_index_pending_bytes(s->index) >= LOADER_APPLY_BYTES) &&
      !stopping(s))
    rc = value_index_apply_step(s->index, *ran == 0, err);
  return rc;
}

static void *loader_main(void *arg) {
  index_sync_t *s = arg;
#ifdef __linux__
  /* The lowest priority (this thread only, on Linux): on a busy machine the searches the
     loader is meant to speed up go first. Failing to lower it is harmless. A caller that
     waits for the loader loads at its own priority meanwhile (index_sync_loader_wait). */
  (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
#endif
  uint64_t t0 = clock_now_ns();
  int first_rc = BFH_OK, locked = 0;
  err_t first;
  err_clear(&first);
  /* Room for every leaf to come at once: growing the sliced index's rows step by step would
     copy them again at each growth. Without the memory it grows as it goes. */
  (void)value_index_reserve(s->index, count_to_read(s), NULL);
  while (!wait_hold(s)) {
    err_t e;
    err_clear(&e);
    size_t ran = 0;
    int rc = load_step(s, &ran, &e);
    if (rc != BFH_OK && first_rc == BFH_OK) {
      first_rc = rc;
      first = e;
    }
    if (rc != BFH_OK) break; /* failed: the views index new tables themselves again */
    if (ran == 0) {          /* done, unless new tables were marked meanwhile (a kick) */
      /* Every table it answered for has its leaf now: the persisted index is let go, with
         the chunks it read (a table without a leaf is selected, as without the file). */
      value_index_attach_persisted(s->index, NULL);
      pthread_mutex_lock(&s->load_mu);
      if (!s->loader_kick) {
        locked = 1; /* ends with load_mu held: a start from now on starts a new loader */
        break;
      }
      s->loader_kick = 0;
      pthread_mutex_unlock(&s->load_mu);
    }
  }
  if (!locked) pthread_mutex_lock(&s->load_mu);
  s->loader_running = 0;
  s->loader_rc = first_rc;
  snprintf(s->loader_msg, sizeof s->loader_msg, "%s", first.msg);
  s->loader_ns = clock_now_ns() - t0;
  loader_settle(s);
  pthread_cond_broadcast(&s->load_cv);
  pthread_mutex_unlock(&s->load_mu);
  return NULL;
}

int index_sync_loader_start(index_sync_t *s, err_t *err) {
  (void)err;
  pthread_mutex_lock(&s->load_mu);
  if (s->loader_running)
    s->loader_kick = 1; /* it looks for tables to read once more */
  else
    s->loader_armed = 1;
  loader_settle(s);
  pthread_mutex_unlock(&s->load_mu);
  return BFH_OK;
}

int index_sync_loader_go(index_sync_t *s, err_t *err) {
  pthread_mutex_lock(&s->load_mu);
  int rc = BFH_OK;
  if (s->loader_armed && !s->loader_running) {
    if (s->loader_started) { /* a finished one */
      pthread_join(s->loader, NULL);
      s->loader_started = 0;
    }
    s->loader_running = 1;
    s->loader_stop = 0;
    s->loader_kick = 0;
    if (pthread_create(&s->loader, NULL, loader_main, s) != 0) {
      s->loader_running = 0; /* stays armed: the next go tries again */
      rc = err_set(err, BFH_E_IO, "index sync: cannot start the loader thread");
    } else {
      s->loader_started = 1;
      s->loader_armed = 0;
    }
    loader_settle(s);
  }
  pthread_mutex_unlock(&s->load_mu);
  return rc;
}

int index_sync_loader_searched(index_sync_t *s, err_t *err) {
  if (atomic_load_explicit(&s->loader_settled, memory_order_acquire)) return BFH_OK;
  pthread_mutex_lock(&s->load_mu);
  int again = ++s->searches >= 2;
  loader_settle(s);
  pthread_mutex_unlock(&s->load_mu);
  return again ? index_sync_loader_go(s, err) : BFH_OK;
}

void index_sync_loader_stop(index_sync_t *s) {
  pthread_mutex_lock(&s->load_mu);
  int started = s->loader_started;
  s->loader_stop = 1;
  s->loader_started = 0;
  s->loader_armed = 0;
  loader_settle(s);
  pthread_mutex_unlock(&s->load_mu);
  if (!started) return;
  pthread_mutex_lock(&hold_mu); /* wakes a loader held by the test hook */
  pthread_cond_broadcast(&hold_cv);
  pthread_mutex_unlock(&hold_mu);
  pthread_join(s->loader, NULL);
}

int index_sync_loader_went(index_sync_t *s) {
  pthread_mutex_lock(&s->load_mu);
  int went = s->loader_started;
  pthread_mutex_unlock(&s->load_mu);
  return went;
}

int index_sync_loader_active(index_sync_t *s) {
  pthread_mutex_lock(&s->load_mu);
  int running = s->loader_running || s->loader_armed;
  pthread_mutex_unlock(&s->load_mu);
  return running;
}

static int hold_active(void) {
  pthread_mutex_lock(&hold_mu);
  int h = held;
  pthread_mutex_unlock(&hold_mu);
  return h;
}

int index_sync_loader_wait(index_sync_t *s, uint64_t *elapsed_ns, err_t *err) {
  /* Settled: the go, the loading beside it and the wait below would each find nothing. */
  if (!elapsed_ns && atomic_load_explicit(&s->loader_settled, memory_order_acquire)) return BFH_OK;
  int rc = index_sync_loader_go(s, err);
  if (rc != BFH_OK) return rc;
  /* The caller loads beside the loader, at its own priority, instead of waiting on a thread
     that runs at the lowest (on a busy machine it would barely run). Steps are serialized
     (run_mu), so the two share the tables. A failed step is left to the loader, which meets
     it again and reports it below. Not while the test hook holds the loaders. */
  size_t ran = 1;
  while (ran > 0 && index_sync_loader_active(s) && !hold_active()) {
    err_t e;
    err_clear(&e);
    if (load_step(s, &ran, &e) != BFH_OK) break;
  }
  pthread_mutex_lock(&s->load_mu);
  while (s->loader_running) pthread_cond_wait(&s->load_cv, &s->load_mu);
  rc = s->loader_rc;
  if (rc != BFH_OK) err_set(err, rc, "%s", s->loader_msg);
  if (elapsed_ns) *elapsed_ns = s->loader_ns;
  pthread_mutex_unlock(&s->load_mu);
  return rc;
}
