/* The live write-ahead logs of a RocksDB database read into segments of value entries: the
 * memtables a view searches (rdb_adapter.h, step 2). RocksDB's C API hands the WAL out as write
 * batches (rocksdb_get_updates_since); each batch's bytes (rocksdb_writebatch_data) are decoded
 * by bfh's reader of the batch format (rocksdb_format/rdb_log.h), because the C API's own batch
 * iterator drops merge operands and the entries of other column families without a word.
 * Only puts of the engine's column family (its id) enter a segment; a merge operand, a blob index
 * or a wide-column entity of it is refused (BFH_E_UNSUPPORTED); deletions need nothing (a
 * search validates each candidate with rocksdb_get).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/engines/rocksdb/rdb_api.h"
#include "lsm_hooks/rocksdb_format/rdb_log.h"

typedef struct decode {
  stock_seg_builder_t *b;
  uint32_t cf; /* the column family whose entries are kept */
  const char *dir;
  err_t *err;
  int rc; /* the refusal, or BFH_E_NOMEM */
} decode_t;

static int visit_record(void *arg, const rdb_log_entry_t *e) {
  decode_t *d = arg;
  if (e->cf != d->cf) return 0; /* another column family's */
  const char *what = e->type == RDB_WB_MERGE        ? "a merge operand (bfh has no merge operator)"
                     : e->type == RDB_WB_BLOB_INDEX ? "a blob reference (bfh does not read "
                                                      "RocksDB's blob files)"
                     : e->type == RDB_WB_WIDE_COLUMN_ENTITY ? "a wide-column entity"
                                                            : NULL;
  if (what) {
    d->rc = err_set(d->err, BFH_E_UNSUPPORTED,
                    "%s: the WAL holds %s at sequence %llu; bfh cannot search this database",
                    d->dir, what, (unsigned long long)e->seq);
    return 1;
  }
  if (e->type == RDB_WB_VALUE &&
      stock_seg_builder_add(d->b, e->seq, e->key, e->key_len, e->val, e->val_len) != BFH_OK) {
    d->rc = err_set(d->err, BFH_E_NOMEM, "%s: no memory for the WAL's entries", d->dir);
    return 1;
  }
  return 0;
}

/* Adds column family cf's puts of the batch rep[0, n) (at sequence seq) to b. */
static int batch_decode(const char *dir, uint32_t cf, uint64_t seq, const uint8_t *rep, size_t n,
                        stock_seg_builder_t *b, err_t *err) {
  char where[ERR_MSG_BYTES]; /* only a message's prefix: err_t holds no more */
  snprintf(where, sizeof where, "%s: WAL write batch at sequence %llu", dir,
           (unsigned long long)seq);
  decode_t d = {b, cf, dir, err, BFH_OK};
  int stopped = 0;
  int rc = rdb_log_decode_batch(rep, n, 0, 0, where, visit_record, &d, &stopped, NULL, err);
  return rc != BFH_OK ? rc : d.rc;
}

uint64_t rdb_super_version(engine_rocksdb_t *er) {
  char *s = rocksdb_property_value_cf(er->db, er->cf, "rocksdb.current-super-version-number");
  uint64_t v = s ? strtoull(s, NULL, 10) : 0;
  rocksdb_free(s);
  return v;
}

/* A WAL that vanished between RocksDB's listing of the WAL files and its read of one: a purge
   of obsolete files already under way when the view disabled file deletions (measured: "IO
   error: No such file or directory: while stat a file for size: .../000131.log" under load).
   Such a WAL's writes are in a table the view lists after the WAL read. */
static int wal_vanished(const char *msg) {
  return strstr(msg, "No such file") != NULL;
}

/* RocksDB's WAL iterator came to the end of the WAL files it listed when it was made while the
   database's last sequence number was past its last batch: "Operation failed. Try again.:
   Create a new iterator to fetch the new tail." A writer appended after the iterator passed, or
   into a WAL made after the listing (measured: 27 of 1,104 searches failed on it in 5 s of
   rocksdb_concurrency_test before it was handled). */
static int wal_try_again(const char *msg) {
  return strstr(msg, "Try again") != NULL;
}

/* How many iterators one read makes (the first and the retries). A read is retried only while
   the batches up to `last`, the last sequence number when the read began, are not all read.
   Each of those batches was in its WAL before `last` was published, so a new iterator, which
   lists the WAL files again, reads them all unless a file vanished between its listing and its
   read (above); that purge was under way before the view held deletions off, and once it has
   run the next listing no longer names the file. So one retry should do: in 30 s of
   rocksdb_concurrency_test every "Try again" came after `last` (no retry was made), and a
   vanished WAL was seen once in the whole suite under load. 8 leaves room for a few purges in
   a row, and still ends within milliseconds a read that makes no progress, with RocksDB's
   last message and the count. */
#define RDB_WAL_READ_ATTEMPTS 8

/* One iterator's pass: the batches from *next on into b, *next moved past each. BFH_OK with
   *msg set (RocksDB's, to rocksdb_free) when the iterator could not be made or ended in error;
   another status for a batch bfh refuses, or no memory. */
static int read_pass(engine_rocksdb_t *er, stock_seg_builder_t *b, uint64_t *next, char **msg,
                     err_t *err) {
  const char *injected = er->wal_hook ? er->wal_hook(er->wal_hook_arg) : NULL;
  if (injected) { /* tests: as if the iterator could not be made */
    *msg = strdup(injected);
    return *msg ? BFH_OK : err_set(err, BFH_E_NOMEM, "%s: no memory", er->rw.path);
  }
  /* The iterator kept from the last read goes on from the batch it ended after: RocksDB's
     iterator reads on from its file position while the WAL file it is in grows. One that
     cannot (a WAL file made since) ends in "Try again", and a new one is made below. */
  rocksdb_wal_iterator_t *it = er->wal_it;
  const int resumed = it != NULL;
  er->wal_it = NULL;
  if (it) {
    rocksdb_wal_iter_next(it);
  } else {
    it = rocksdb_get_updates_since(er->db, *next, NULL, msg);
    if (*msg) return BFH_OK;
  }
  int rc = BFH_OK, batches = 0;
  for (; rc == BFH_OK && rocksdb_wal_iter_valid(it); rocksdb_wal_iter_next(it), batches++) {
    uint64_t seq = 0;
    rocksdb_writebatch_t *wb = rocksdb_wal_iter_get_batch(it, &seq);
    int count = rocksdb_writebatch_count(wb);
    if (seq >= *next) { /* a batch read before is skipped whole */
      size_t len = 0;
      const char *rep = rocksdb_writebatch_data(wb, &len);
      rc = batch_decode(er->rw.path, er->cf_id, seq, (const uint8_t *)rep, len, b, err);
      if (rc == BFH_OK) *next = seq + (uint64_t)(count > 0 ? count : 1);
    }
    rocksdb_writebatch_destroy(wb);
  }
  if (rc == BFH_OK) rocksdb_wal_iter_status(it, msg);
  /* Kept at the tail, every batch read, once it has read a batch: one that found no WAL file
     to read has no file to go on in (RocksDB asserts one). */
  if (rc == BFH_OK && !*msg && (batches > 0 || resumed))
    er->wal_it = it; /* the next read goes on from here */
  else
    rocksdb_wal_iter_destroy(it);
  return rc;
}

void rdb_wal_drop(engine_rocksdb_t *er) {
  if (er->wal_it) rocksdb_wal_iter_destroy(er->wal_it);
  er->wal_it = NULL;
}

/* rocksdb.min-log-number-to-keep: the oldest WAL file RocksDB still needs, which moves when a
   flush has put a WAL's entries into a table (0 if RocksDB gives none). */
static uint64_t wal_keep(engine_rocksdb_t *er) {
  char *s = rocksdb_property_value_cf(er->db, er->cf, "rocksdb.min-log-number-to-keep");
  uint64_t v = s ? strtoull(s, NULL, 10) : 0;
  rocksdb_free(s);
  return v;
}

/* Reads the batches from *next on into b: every batch up to sequence number last, and what
   follows it as far as the iterator went. A transient error before last is retried from a new
   iterator at *next (what was read is kept). */
static int read_batches(engine_rocksdb_t *er, uint64_t last, stock_seg_builder_t *b, uint64_t *next,
                        err_t *err) {
  for (int attempt = 1;; attempt++) {
    char *msg = NULL;
    int rc = read_pass(er, b, next, &msg, err);
    if (rc != BFH_OK || !msg) return rc;
    int transient = wal_try_again(msg) || wal_vanished(msg);
    er->wal_transients += (uint64_t)transient;
    if (transient && *next > last) { /* the view's writes are read; the rest is the next view's */
      rocksdb_free(msg);
      return BFH_OK;
    }
    if (transient && attempt < RDB_WAL_READ_ATTEMPTS) {
      rocksdb_free(msg);
      continue;
    }
    if (transient)
      rc = err_set(err, BFH_E_IO,
                   "%s: reading the WAL from sequence %llu: %s (%d iterators in a row said so; the "
                   "writes up to sequence %llu are not all read)",
                   er->rw.path, (unsigned long long)*next, msg, attempt, (unsigned long long)last);
    else
      rc = err_set(err, strstr(msg, "Corruption") ? BFH_E_CORRUPT : BFH_E_IO,
                   "%s: reading the WAL from sequence %llu: %s", er->rw.path,
                   (unsigned long long)*next, msg);
    rocksdb_free(msg);
    return rc;
  }
}

void engine_rocksdb_set_wal_hook(engine_t *e, const char *(*fn)(void *arg), void *arg) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)e;
  pthread_mutex_lock(&er->rw.sync_mu);
  er->wal_hook = fn;
  er->wal_hook_arg = arg;
  pthread_mutex_unlock(&er->rw.sync_mu);
}

uint64_t engine_rocksdb_wal_transients(engine_t *e) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)e;
  pthread_mutex_lock(&er->rw.sync_mu);
  uint64_t n = er->wal_transients;
  pthread_mutex_unlock(&er->rw.sync_mu);
  return n;
}

int rdb_wal_refresh(engine_rocksdb_t *er, err_t *err) {
  /* After a flush the segments hold entries that are in a table now: they are dropped and the
     live WAL read again, so that they never grow past it. Reading on instead would lose
     nothing (a search finds a key in a segment and in a table alike), and does between
     flushes, compactions included. Where RocksDB gives no min-log-number-to-keep, every
     super version change (flushes, compactions, memtable switches) starts over. */
  const uint64_t keep = wal_keep(er);
  const uint64_t sv = keep ? 0 : rdb_super_version(er);
  if (keep != er->wal_keep || sv != er->sv_number) {
    stock_segs_clear(&er->segs);
    rdb_wal_drop(er);
    er->next_seq = 0;
    er->wal_keep = keep;
    er->sv_number = sv;
  }
  uint64_t last = rocksdb_get_latest_sequence_number(er->db);
  if (last == 0 || er->next_seq > last) return BFH_OK; /* nothing written since */
  stock_seg_builder_t b = {.seed = stock_value_seed(er->rw.sync),
                           .terms = stock_value_terms(er->rw.sync)};
  uint64_t next = er->next_seq;
  int rc = read_batches(er, last, &b, &next, err);
  if (rc == BFH_OK && b.n > 0 && stock_segs_push(&er->segs, &b) != BFH_OK)
    rc = err_set(err, BFH_E_NOMEM, "%s: no memory for the WAL's entries", er->rw.path);
  /* Every batch up to last that the live WAL holds is read (read_batches); one it does not
     hold is in a table. So the next refresh starts past last even when the WAL held none of
     them (a reopened database whose WAL was flushed at its recovery): else every view read
     the WAL files' heads again for nothing, a listing and an open of each. */
  if (rc == BFH_OK) er->next_seq = next > last ? next : last + 1;
  stock_seg_builder_release(&b);
  return rc;
}
