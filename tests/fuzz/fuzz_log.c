/* Fuzz target: the own engine's log reader (lsm/log_reader.c), used for write-ahead logs
 * and the manifest, and the write batch decoder (lsm/write_batch.c) that the recovery of a
 * write-ahead log runs on every record (the manifest's records: fuzz_manifest).
 *
 * The input is a whole log file, written to a scratch file (log_reader_open takes a path).
 * It is read twice: as given, and as a copy in which the CRC of every physical record whose
 * header and payload fit in their block was recomputed (fuzz_fix_log_crcs), so that fuzzing
 * reaches the fragment assembly and torn-tail logic behind the checksum.
 * Invariants checked: once the reader returned BFH_NOT_FOUND, the end offset plus the
 * dropped bytes is the file size; errors are sticky. Then it is read a third way, as repair
 * reads it: past every damaged record (log_reader_skip_damage), which must always make
 * progress and end.
 */
#include "fuzz_util.h"

#include "util/env.h"
#include "lsm/log.h"
#include "lsm/write_batch.h"

static int visit(void *arg, uint64_t seq, int type, const void *key, size_t klen, const void *val,
                 size_t vlen) {
  (void)seq, (void)type, (void)key, (void)klen, (void)val, (void)vlen;
  (*(uint64_t *)arg)++;
  return 0;
}

static void exercise(const uint8_t *data, size_t size) {
  char path[512];
  fuzz_write_file("000005.log", data, size, path, sizeof path);
  log_reader_t *r = NULL;
  err_t err;
  if (log_reader_open(env_default(), path, &r, &err) != BFH_OK) return;
  int rc;
  uint64_t records = 0;
  for (;;) {
    const void *rec;
    size_t n;
    rc = log_reader_next(r, &rec, &n, &err);
    if (rc != BFH_OK) break;
    fuzz_check(n <= size);
    fuzz_check(log_reader_record_offset(r) < size ||
               (n == 0 && log_reader_record_offset(r) <= size));
    records++;
    uint64_t entries = 0;
    write_batch_iterate(rec, n, visit, &entries, &err);
  }
  if (rc == BFH_NOT_FOUND)
    fuzz_check(log_reader_end_offset(r) + log_reader_dropped_bytes(r) == size);
  const void *rec;
  size_t n;
  fuzz_check(log_reader_next(r, &rec, &n, &err) == rc);
  log_reader_close(r);
}

/* Repair's reading: skip each damaged record (to the next record that checks out, or the
   next block) and go on. */
static void salvage(const char *path, size_t size) {
  log_reader_t *r = NULL;
  err_t err;
  if (log_reader_open(env_default(), path, &r, &err) != BFH_OK) return;
  uint64_t skipped = 0, steps = 0;
  for (;;) {
    const void *rec;
    size_t n;
    int rc = log_reader_next(r, &rec, &n, &err);
    if (rc == BFH_OK) continue;
    if (rc != BFH_E_CORRUPT) break;
    uint64_t s = log_reader_skip_damage(r);
    fuzz_check(s > 0); /* progress: a damaged record is always skipped past */
    skipped += s;
    fuzz_check(skipped <= size);
    /* every skip passes at least a header: a bounded number of them */
    fuzz_check(s >= LOG_HEADER_BYTES || log_reader_end_offset(r) == size);
    fuzz_check(++steps <= size / LOG_HEADER_BYTES + 2);
  }
  log_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  exercise(data, size);
  char path[512];
  fuzz_write_file("000006.log", data, size, path, sizeof path);
  salvage(path, size);
  uint8_t *c = fuzz_copy(data, size);
  fuzz_fix_log_crcs(c, size);
  if (size && memcmp(c, data, size) != 0) exercise(c, size);
  free(c);
  return 0;
}
