/* The live write-ahead logs of a RocksDB database read into segments of value entries: the
 * memtables a view searches (rdb_adapter.h, step 2). RocksDB's C API hands the WAL out as write
 * batches (rocksdb_get_updates_since); each batch's bytes (rocksdb_writebatch_data) are decoded
 * here, because the C API's own batch iterator drops merge operands and the entries of other
 * column families without a word.
 *
 * A write batch (RocksDB's db/write_batch.cc): sequence fixed64 | count fixed32 | records,
 * each a tag byte and its fields: varstring = varint32 length + bytes; cf = varint32 column
 * family id, present in the tags named "CF" below.
 *   0 delete key | 1 put key value | 2 merge key value | 3 log data blob | 4 CF delete
 *   5 CF put | 6 CF merge | 7 single delete key | 8 CF single delete | 9 begin prepare |
 *   10 end prepare xid | 11 commit xid | 12 rollback xid | 13 noop | 14 CF range delete begin
 *   end | 15 range delete begin end | 16 CF blob index | 17 blob index key ref |
 *   18 begin persisted prepare | 19 begin unprepare | 20 delete with timestamp key |
 *   21 commit with timestamp ts xid | 22 wide-column entity key entity | 23 CF entity
 * Only puts of the default column family (id 0) enter a segment; a merge operand, a blob
 * index or an entity of it is refused (BFH_E_UNSUPPORTED); deletions need nothing (a search
 * validates each candidate with rocksdb_get).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "util/coding.h"

/* The fields of each tag: bit 0 a cf id first, then the number of varstrings. */
static int tag_layout(uint8_t tag, int *has_cf, int *nstr) {
  static const signed char strs[24] = {1, 2, 2, 1, 1, 2, 2, 1, 1, 0, 1, 1,
                                       1, 0, 2, 2, 2, 2, 0, 0, 1, 2, 2, 2};
  if (tag >= 24) return 0;
  *has_cf = tag == 4 || tag == 5 || tag == 6 || tag == 8 || tag == 14 || tag == 16 || tag == 23;
  *nstr = strs[tag];
  return 1;
}

static int batch_damaged(const char *dir, uint64_t seq, size_t off, const char *what, err_t *err) {
  return err_set(err, BFH_E_CORRUPT, "%s: WAL write batch at sequence %llu: offset %zu: %s", dir,
                 (unsigned long long)seq, off, what);
}

/* Adds the default column family's puts of the batch rep[0, n) to b. */
static int batch_decode(const char *dir, const uint8_t *rep, size_t n, ldb_seg_builder_t *b,
                        err_t *err) {
  if (n < 12) return batch_damaged(dir, 0, 0, "shorter than its header", err);
  uint64_t seq = decode_fixed64(rep);
  const uint8_t *p = rep + 12, *end = rep + n;
  while (p < end) {
    uint8_t tag = *p++;
    int has_cf, nstr;
    if (!tag_layout(tag, &has_cf, &nstr))
      return err_set(err, BFH_E_UNSUPPORTED,
                     "%s: WAL write batch at sequence %llu: record type %u is not one RocksDB "
                     "7.8 writes",
                     dir, (unsigned long long)seq, tag);
    uint32_t cf = 0, len[2] = {0, 0};
    const uint8_t *s[2] = {NULL, NULL};
    if (has_cf && !(p = decode_varint32(p, end, &cf)))
      return batch_damaged(dir, seq, (size_t)(end - rep), "bad column family id", err);
    for (int i = 0; i < nstr; i++) {
      if (!(p = decode_varint32(p, end, &len[i])) || len[i] > (size_t)(end - p))
        return batch_damaged(dir, seq, n, "a length past its end", err);
      s[i] = p;
      p += len[i];
    }
    if (cf != 0) continue; /* another column family's */
    if (tag == 2 || tag == 6)
      return err_set(err, BFH_E_UNSUPPORTED,
                     "%s: the WAL holds a merge operand (sequence %llu's batch); bfh cannot search "
                     "a RocksDB database with merge operands (it has no merge operator)",
                     dir, (unsigned long long)seq);
    if (tag == 16 || tag == 17)
      return err_set(err, BFH_E_UNSUPPORTED,
                     "%s: the WAL holds a blob reference (sequence %llu's batch); bfh does not "
                     "read RocksDB's blob files",
                     dir, (unsigned long long)seq);
    if (tag == 22 || tag == 23)
      return err_set(err, BFH_E_UNSUPPORTED,
                     "%s: the WAL holds a wide-column entity (sequence %llu's batch), which bfh "
                     "does not read",
                     dir, (unsigned long long)seq);
    if ((tag == 1 || tag == 5) && ldb_seg_builder_add(b, s[0], len[0], s[1], len[1]) != BFH_OK)
      return err_set(err, BFH_E_NOMEM, "%s: no memory for the WAL's entries", dir);
  }
  return BFH_OK;
}

static void segs_drop(engine_rocksdb_t *er) {
  for (size_t i = 0; i < er->nsegs; i++) ldb_seg_unref(er->segs[i]);
  er->nsegs = 0;
}

void rdb_wal_release(engine_rocksdb_t *er) {
  segs_drop(er);
  free(er->segs);
  er->segs = NULL;
  er->segs_cap = 0;
}

static uint64_t super_version(engine_rocksdb_t *er) {
  char *s = rocksdb_property_value(er->db, "rocksdb.current-super-version-number");
  uint64_t v = s ? strtoull(s, NULL, 10) : 0;
  rocksdb_free(s);
  return v;
}

/* Reads the batches from er->next_seq on into b. */
static int read_batches(engine_rocksdb_t *er, ldb_seg_builder_t *b, uint64_t *next, err_t *err) {
  char *msg = NULL;
  rocksdb_wal_iterator_t *it = rocksdb_get_updates_since(er->db, *next, NULL, &msg);
  if (msg) {
    int rc = err_set(err, BFH_E_IO, "%s: reading the WAL from sequence %llu: %s", er->path,
                     (unsigned long long)*next, msg);
    rocksdb_free(msg);
    return rc;
  }
  int rc = BFH_OK;
  for (; rc == BFH_OK && rocksdb_wal_iter_valid(it); rocksdb_wal_iter_next(it)) {
    uint64_t seq = 0;
    rocksdb_writebatch_t *wb = rocksdb_wal_iter_get_batch(it, &seq);
    int count = rocksdb_writebatch_count(wb);
    if (seq >= *next) { /* a batch read before is skipped whole */
      size_t len = 0;
      const char *rep = rocksdb_writebatch_data(wb, &len);
      rc = batch_decode(er->path, (const uint8_t *)rep, len, b, err);
      if (rc == BFH_OK) *next = seq + (uint64_t)(count > 0 ? count : 1);
    }
    rocksdb_writebatch_destroy(wb);
  }
  if (rc == BFH_OK) {
    rocksdb_wal_iter_status(it, &msg);
    if (msg) {
      rc = err_set(err, strstr(msg, "Corruption") ? BFH_E_CORRUPT : BFH_E_IO,
                   "%s: reading the WAL: %s", er->path, msg);
      rocksdb_free(msg);
    }
  }
  rocksdb_wal_iter_destroy(it);
  return rc;
}

int rdb_wal_refresh(engine_rocksdb_t *er, err_t *err) {
  uint64_t sv = super_version(er);
  if (sv != er->sv_number) { /* a flush or a compaction: read the live WAL again */
    segs_drop(er);
    er->next_seq = 0;
    er->sv_number = sv;
  }
  uint64_t last = rocksdb_get_latest_sequence_number(er->db);
  if (last == 0 || er->next_seq > last) return BFH_OK; /* nothing written since */
  ldb_seg_builder_t b = {.seed = ldb_value_seed(er->sync)};
  uint64_t next = er->next_seq;
  int rc = read_batches(er, &b, &next, err);
  if (rc == BFH_OK && b.n > 0) {
    if (er->nsegs == er->segs_cap) {
      size_t c = er->segs_cap ? 2 * er->segs_cap : 8;
      log_seg_t **ns = realloc(er->segs, c * sizeof *ns);
      if (ns) {
        er->segs = ns;
        er->segs_cap = c;
      }
    }
    log_seg_t *s = er->nsegs < er->segs_cap ? ldb_seg_builder_finish(&b) : NULL;
    if (s)
      er->segs[er->nsegs++] = s;
    else
      rc = err_set(err, BFH_E_NOMEM, "%s: no memory for the WAL's entries", er->path);
  }
  if (rc == BFH_OK) er->next_seq = next;
  ldb_seg_builder_release(&b);
  return rc;
}
