/* The live logs of a LevelDB database read into immutable segments of value entries: the
 * memtables a view searches (adapter.h, step 1 of the sync). Each segment carries a hash index
 * of its entries by value (layout in stock/stock.h), built once when it is made, so that a search
 * looks up the entries of its value instead of comparing every unflushed entry.
 *
 * A read racing LevelDB's append can see part of a write(2): a record whose bytes are not all
 * there yet looks damaged. Such a read is repeated holding write_lock exclusively (puts,
 * deletes and flushes hold it shared): no append is in flight then, so damage seen now is in
 * the file.
 */
#include <stdlib.h>

#include "bfh.h"
#include "lsm_hooks/engines/dir_watch.h"
#include "lsm_hooks/engines/leveldb/adapter.h"
#include "lsm_hooks/leveldb_format/ldb_log.h"
#include "util/path.h"
#include "util/vec.h"

static int append_entry(void *arg, const ldb_entry_t *e) {
  if (e->type != LDB_TYPE_VALUE) return 0;
  return stock_seg_builder_add(arg, e->seq, e->key, e->key_len, e->val, e->val_len) != BFH_OK;
}

/* The kernel queues a creation's event before the creating call returns, so a log (or a
   table) that LevelDB made before a put was acknowledged has its event queued before any
   later read of the watch. A removal's event is not so ordered (dir_watch.h): a log found
   gone counts as an event of its own (ldb_logs_refresh). */
void ldb_dir_events(engine_leveldb_t *el) {
  if (el->watch.fd >= 0 && atomic_load(&el->watch_held)) return; /* a test holds the events */
  if (dir_watch_poll(&el->watch)) {
    el->dir_changed = 1;
    el->dir_events++;
  }
}

/* The numbers of the live log files into nums: listed from the directory (*listed = 1), or,
   while the watch reports nothing since the last refresh that listed and read every log
   without error, the logs known then. The caller has just read the watch. */
static int live_logs(engine_leveldb_t *el, u64vec_t *nums, int *listed, err_t *err) {
  *listed = 0;
  if (!el->dir_changed) { /* the directory need not be listed again */
    for (size_t i = 0; i < el->nlogs; i++)
      if (u64vec_push(nums, el->logs[i].number) != BFH_OK)
        return err_set(err, BFH_E_NOMEM, "%s: no memory to list logs", el->rw.path);
    return BFH_OK;
  }
  char **names;
  size_t n;
  int rc = env_list_dir(el->rw.io, el->rw.path, &names, &n, err);
  if (rc != BFH_OK) return err_prefix(err, "%s: list directory: ", el->rw.path);
  for (size_t i = 0; rc == BFH_OK && i < n; i++) {
    uint64_t num;
    if (stock_file_number(names[i], "log", &num) && u64vec_push(nums, num) != BFH_OK)
      rc = err_set(err, BFH_E_NOMEM, "%s: no memory to list logs", el->rw.path);
  }
  env_names_free(names, n);
  *listed = rc == BFH_OK;
  return rc;
}

/* A listing, or a log found gone: the last pin may lack the table of a log this refresh
   did not read, so the next pin_list must fetch the list (see pin_list in sync.c). */
static void logs_changed(engine_leveldb_t *el) {
  el->dir_events++;
}

/* The known log numbered `number`; with add, a new one (zeroed) when unknown. NULL when
   unknown without add, or out of memory. */
static log_state_t *log_state(engine_leveldb_t *el, uint64_t number, int add) {
  for (size_t i = 0; i < el->nlogs; i++)
    if (el->logs[i].number == number) return &el->logs[i];
  if (!add) return NULL;
  if (stock_grow(&el->logs, &el->logs_cap, el->nlogs + 1, sizeof *el->logs, 8) != BFH_OK)
    return NULL;
  el->logs[el->nlogs] = (log_state_t){.number = number};
  return &el->logs[el->nlogs++];
}

/* Reads what was appended to log l since the last read into a new segment of l. BFH_NOT_FOUND
   when the log is gone: its table is installed, maybe not in the pin. */
static int read_log(engine_leveldb_t *el, log_state_t *l, err_t *err) {
  char *path = path_fmt("%s/%06llu.log", el->rw.path, (unsigned long long)l->number);
  if (!path)
    return err_set(err, BFH_E_NOMEM, "%s/%06llu.log: no memory for its path", el->rw.path,
                   (unsigned long long)l->number);
  /* LevelDB only appends to a log: one no longer than where the last read stopped holds
     nothing new. */
  uint64_t size, next = l->resume;
  err_t e;
  int r = env_path_size(el->rw.io, path, &size, &e);
  if (r == BFH_OK && size <= l->resume) {
    free(path);
    return BFH_OK;
  }
  stock_seg_builder_t b = {.seed = stock_value_seed(el->rw.sync),
                           .terms = stock_value_terms(el->rw.sync)};
  ldb_read_stats_t st = {0};
  if (r != BFH_NOT_FOUND)
    r = ldb_log_read(el->rw.io, path, l->resume, append_entry, &b, &next, &st, err);
  if (r == BFH_E_CORRUPT) {
    /* Perhaps part of an append in flight (the top of this file): read again with every
       writer held off. */
    stock_seg_builder_release(&b);
    b = (stock_seg_builder_t){.seed = stock_value_seed(el->rw.sync),
                              .terms = stock_value_terms(el->rw.sync)};
    next = l->resume;
    el->stats.log_rereads++;
    pthread_rwlock_wrlock(&el->write_lock);
    r = ldb_log_read(el->rw.io, path, l->resume, append_entry, &b, &next, &st, err);
    pthread_rwlock_unlock(&el->write_lock);
  }
  el->stats.log_bytes += st.bytes_read;
  if (r == BFH_OK && b.nomem) r = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
  if (r == BFH_OK && b.n > 0 && stock_segs_push(&l->segs, &b) != BFH_OK)
    r = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
  if (r == BFH_OK) l->resume = next;
  stock_seg_builder_release(&b);
  free(path);
  return r;
}

int ldb_logs_refresh(engine_leveldb_t *el, int read, err_t *err) {
  /* No write ended since a refresh that read every log, and no file made or removed: each
     log ends where that read stopped. A write acknowledged before this view counted before
     the count read here; one that counted before the last read's count had ended, so that
     read's stat, after its count, saw its bytes. */
  const uint64_t writes = atomic_load(&el->writes_done);
  ldb_dir_events(el);
  if (read && el->logs_read_ok && writes == el->logs_read_at && !el->dir_changed) return BFH_OK;
  el->logs_read_ok = 0;
  for (size_t i = 0; i < el->nlogs; i++) el->logs[i].seen = 0;
  u64vec_t nums;
  u64vec_init(&nums);
  int listed;
  int rc = live_logs(el, &nums, &listed, err);
  /* A listing may lack a log whose name is gone while its removal's event is not queued
     yet, one this handle never read: the pin must then be one fetched after the listing. */
  if (listed) logs_changed(el);
  for (size_t j = 0; rc == BFH_OK && j < nums.n; j++) {
    log_state_t *l = log_state(el, nums.v[j], read);
    if (!l && read) rc = err_set(err, BFH_E_NOMEM, "%s: no memory for logs", el->rw.path);
    int r = l && read ? read_log(el, l, err) : BFH_OK;
    if (r == BFH_NOT_FOUND) /* deleted since the listing: its table is installed */
      logs_changed(el);
    else if (r != BFH_OK)
      rc = r;
    else if (l)
      l->seen = 1;
  }
  u64vec_release(&nums);
  if (rc != BFH_OK) return rc;
  size_t w = 0;
  for (size_t i = 0; i < el->nlogs; i++) {
    if (el->logs[i].seen)
      el->logs[w++] = el->logs[i];
    else
      stock_segs_release(&el->logs[i].segs);
  }
  el->nlogs = w;
  /* A listing that read every log leaves the logs known complete (events queued meanwhile
     are read next time); one that did not read adds no new log to them. */
  if (listed && read) el->dir_changed = 0;
  if (read && !el->dir_changed) {
    el->logs_read_ok = 1;
    el->logs_read_at = writes;
  }
  return BFH_OK;
}

void ldb_logs_release(engine_leveldb_t *el) {
  for (size_t i = 0; i < el->nlogs; i++) stock_segs_release(&el->logs[i].segs);
  free(el->logs);
  el->logs = NULL;
  el->nlogs = el->logs_cap = 0;
}
