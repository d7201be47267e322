/* The live logs of a LevelDB database read into immutable segments of value entries: the
 * memtables a view scans (adapter.h, step 1 of the sync).
 *
 * A read racing LevelDB's append can see part of a write(2): a record whose bytes are not all
 * there yet looks damaged. Such a read is repeated holding write_lock exclusively (puts,
 * deletes and flushes hold it shared): no append is in flight then, so damage seen now is in
 * the file.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/leveldb/adapter.h"
#include "lsm_hooks/leveldb/log.h"
#include "lsm_hooks/leveldb/precheck.h"
#include "util/coding.h"
#include "util/vec.h"

void ldb_seg_unref(log_seg_t *s) {
  if (s && atomic_fetch_sub(&s->refs, 1) == 1) free(s);
}

typedef struct seg_builder {
  uint8_t *p;
  size_t len, cap;
  uint64_t n;
  int nomem;
} seg_builder_t;

static int append_entry(void *arg, const ldb_entry_t *e) {
  seg_builder_t *b = arg;
  if (e->type != LDB_TYPE_VALUE) return 0;
  size_t need = b->len + 2 * VARINT32_MAX_BYTES + e->key_len + e->val_len;
  if (need > b->cap) {
    size_t c = b->cap ? b->cap : 65536;
    while (c < need) c *= 2;
    uint8_t *p = realloc(b->p, c);
    if (!p) {
      b->nomem = 1;
      return 1;
    }
    b->p = p;
    b->cap = c;
  }
  uint8_t *q = encode_varint32(b->p + b->len, (uint32_t)e->key_len);
  memcpy(q, e->key, e->key_len);
  q = encode_varint32(q + e->key_len, (uint32_t)e->val_len);
  memcpy(q, e->val, e->val_len);
  b->len = (size_t)(q + e->val_len - b->p);
  b->n++;
  return 0;
}

static void log_state_release(log_state_t *l) {
  for (size_t i = 0; i < l->nsegs; i++) ldb_seg_unref(l->segs[i]);
  free(l->segs);
}

int ldb_logs_refresh(engine_leveldb_t *el, int read, err_t *err) {
  DIR *d = opendir(el->path);
  if (!d) return err_errno(err, errno, "%s: list directory", el->path);
  for (size_t i = 0; i < el->nlogs; i++) el->logs[i].seen = 0;
  int rc = BFH_OK;
  struct dirent *de;
  u64vec_t nums;
  u64vec_init(&nums);
  while ((de = readdir(d))) {
    uint64_t num;
    if (ldb_file_number(de->d_name, "log", &num) && u64vec_push(&nums, num) != BFH_OK) {
      rc = err_set(err, BFH_E_NOMEM, "%s: no memory to list logs", el->path);
      break;
    }
  }
  closedir(d);
  for (size_t j = 0; rc == BFH_OK && j < nums.n; j++) {
    log_state_t *l = NULL;
    for (size_t i = 0; i < el->nlogs; i++)
      if (el->logs[i].number == nums.v[j]) l = &el->logs[i];
    if (!l && !read) continue;
    if (!l) {
      if (el->nlogs == el->logs_cap) {
        size_t c = el->logs_cap ? 2 * el->logs_cap : 8;
        log_state_t *nl = realloc(el->logs, c * sizeof *nl);
        if (!nl) {
          rc = err_set(err, BFH_E_NOMEM, "%s: no memory for logs", el->path);
          break;
        }
        el->logs = nl;
        el->logs_cap = c;
      }
      l = &el->logs[el->nlogs++];
      memset(l, 0, sizeof *l);
      l->number = nums.v[j];
    }
    if (!read) {
      l->seen = 1;
      continue;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/%06llu.log", el->path, (unsigned long long)l->number);
    seg_builder_t b = {0};
    ldb_read_stats_t st = {0};
    uint64_t next = l->resume;
    int r = ldb_log_read(el->io, path, l->resume, append_entry, &b, &next, &st, err);
    if (r == BFH_E_CORRUPT) {
      /* A read racing LevelDB's append can see part of a write(2) (a record whose bytes are
         not all there yet: a false checksum mismatch). Read again with every writer held
         off: no append is in flight then, so damage seen now is in the file. */
      free(b.p);
      memset(&b, 0, sizeof b);
      next = l->resume;
      el->stats.log_rereads++;
      pthread_rwlock_wrlock(&el->write_lock);
      r = ldb_log_read(el->io, path, l->resume, append_entry, &b, &next, &st, err);
      pthread_rwlock_unlock(&el->write_lock);
    }
    el->stats.log_bytes += st.bytes_read;
    if (r == BFH_OK && b.nomem) r = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
    if (r == BFH_NOT_FOUND) { /* deleted since the listing: its table is installed */
      free(b.p);
      continue;
    }
    if (r != BFH_OK) {
      free(b.p);
      rc = r;
      break;
    }
    if (b.n > 0) {
      log_seg_t *s = malloc(sizeof *s + b.len);
      log_seg_t **ns =
          l->nsegs == l->cap ? realloc(l->segs, (l->cap ? 2 * l->cap : 8) * sizeof *ns) : l->segs;
      if (!s || !ns) {
        free(s);
        if (ns) l->segs = ns;
        free(b.p);
        rc = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
        break;
      }
      if (l->nsegs == l->cap) l->cap = l->cap ? 2 * l->cap : 8;
      l->segs = ns;
      atomic_init(&s->refs, 1);
      s->n = b.n;
      s->len = b.len;
      memcpy(s->data, b.p, b.len);
      l->segs[l->nsegs++] = s;
    }
    free(b.p);
    l->resume = next;
    l->seen = 1;
  }
  u64vec_release(&nums);
  if (rc != BFH_OK) return rc;
  size_t w = 0;
  for (size_t i = 0; i < el->nlogs; i++) {
    if (el->logs[i].seen)
      el->logs[w++] = el->logs[i];
    else
      log_state_release(&el->logs[i]);
  }
  el->nlogs = w;
  return BFH_OK;
}

void ldb_logs_release(engine_leveldb_t *el) {
  for (size_t i = 0; i < el->nlogs; i++) log_state_release(&el->logs[i]);
  free(el->logs);
  el->logs = NULL;
  el->nlogs = el->logs_cap = 0;
}

void ldb_segs_scan(log_seg_t *const *segs, size_t n, const void *val, size_t val_len,
                   engine_match_fn fn, void *arg, engine_scan_stats_t *st) {
  for (size_t i = 0; i < n; i++) {
    const log_seg_t *s = segs[i];
    const uint8_t *p = s->data, *end = s->data + s->len;
    if (st) st->entries += s->n;
    while (p < end) { /* written by append_entry: well formed */
      uint32_t kl = 0, vl = 0;
      p = decode_varint32(p, end, &kl);
      const uint8_t *k = p;
      p = decode_varint32(p + kl, end, &vl);
      if (engine_value_matches(1, p, vl, val, val_len) && fn(arg, k, kl)) return;
      p += vl;
    }
  }
}
