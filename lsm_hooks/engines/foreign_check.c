/* foreign_check: the parts of the LevelDB and RocksDB checks they share (foreign_check.h). */
#include "lsm_hooks/engines/foreign_check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "bfh.h"
#include "lsm/verify.h"
#include "util/env.h"
#include "index/index_sync.h"
#include "lsm_hooks/engines/stock/stock.h"
#include "util/path.h"

void foreign_check_report(foreign_check_t *c, const char *file, uint64_t offset, const char *what) {
  c->st->damaged++;
  if (c->damage) c->damage(c->arg, file, offset, what);
}

int foreign_check_result(foreign_check_t *c, const char *file, int rc, const err_t *e, err_t *err) {
  if (rc == BFH_OK || rc == BFH_NOT_FOUND) return BFH_OK; /* read whole, or deleted meanwhile */
  if (rc == BFH_E_CORRUPT) {
    foreign_check_report(c, file, lsm_verify_message_offset(e->msg),
                         lsm_verify_message_what(e->msg));
    return BFH_OK;
  }
  if (rc == BFH_E_UNSUPPORTED && c->unsupported_checked) { /* not damage, not checked: say so */
    char what[ERR_MSG_BYTES + 32];
    snprintf(what, sizeof what, "not checked: %s", e->msg);
    foreign_check_report(c, file, 0, what);
    return BFH_OK;
  }
  if (err) *err = *e;
  return rc;
}

void foreign_check_count(foreign_check_t *c, const char *path, uint64_t *size) {
  *size = 0;
  if (env_path_size(c->io, path, size, NULL) != BFH_OK) return;
  c->st->files++;
  c->st->bytes += *size;
}

/* check_cache_file for the file at path, of table `number`, whose path tables->path writes
   into table (cap bytes: enough for dir and any table name). */
static void check_cache_file_at(foreign_check_t *c, const foreign_tables_t *tables,
                                const char *name, uint64_t number, const char *path, char *table,
                                size_t cap, uint64_t m, uint32_t k, uint64_t seed,
                                uint64_t *cache_damaged) {
  uint64_t tsize, size;
  tables->path(c->dir, number, table, cap);
  if (env_path_size(c->io, table, &tsize, NULL) != BFH_OK) return; /* its table is gone */
  foreign_check_count(c, path, &size);
  err_t e;
  uint64_t tag;
  if (tables->tag(c->io, table, &tag, &e) != BFH_OK) return;
  if (index_sync_cache_check(c->io, path, number, tsize, tag, m, k, seed, &e) != BFH_E_CORRUPT)
    return;
  char what[ERR_MSG_BYTES + 64];
  /* A damaged map chunk is found by the search that reads it, which then reads the table
     whole; the rest of such a file still loads, so only a file removed is made again. */
  snprintf(what, sizeof what, "%s (harmless: %s)", lsm_verify_message_what(e.msg),
           strstr(e.msg, "chunk at ")
               ? "a search that needs the chunk reads the table whole; delete the file to have "
                 "the next open rebuild it"
               : "the next open rebuilds it from its table");
  char *file = path_join(INDEX_SYNC_CACHE_DIR, name);
  (*cache_damaged)++;
  if (c->damage) c->damage(c->arg, file ? file : name, lsm_verify_message_offset(e.msg), what);
  free(file);
}

/* A file of the leaf cache; one that cannot be checked (no memory) is left unchecked, as the
   cache is rebuilt from the tables whenever it does not check out at open. */
static void check_cache_file(foreign_check_t *c, const foreign_tables_t *tables, const char *name,
                             uint64_t m, uint32_t k, uint64_t seed, uint64_t *cache_damaged) {
  uint64_t number;
  if (!stock_file_number(name, "vf", &number)) return;
  char *path = path_fmt("%s/%s/%s", c->dir, INDEX_SYNC_CACHE_DIR, name);
  size_t cap = strlen(c->dir) + 32; /* "/", 20 digits, ".ldb" */
  char *table = malloc(cap);
  if (path && table)
    check_cache_file_at(c, tables, name, number, path, table, cap, m, k, seed, cache_damaged);
  free(path);
  free(table);
}

int foreign_check_cache(foreign_check_t *c, const foreign_tables_t *tables, uint64_t m, uint32_t k,
                        uint64_t seed, uint64_t *cache_damaged, err_t *err) {
  char *dir = path_join(c->dir, INDEX_SYNC_CACHE_DIR);
  if (!dir)
    return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", c->dir, INDEX_SYNC_CACHE_DIR);
  char **names = NULL;
  size_t n = 0;
  int rc = env_exists(c->io, dir) ? env_list_dir(c->io, dir, &names, &n, err) : BFH_OK;
  for (size_t i = 0; i < n && rc == BFH_OK; i++)
    check_cache_file(c, tables, names[i], m, k, seed, cache_damaged);
  env_names_free(names, n);
  free(dir);
  return rc;
}

int foreign_check_lock(env_t *io, const char *dir, const char *engine, const char *hint,
                       env_lock_t **lock, err_t *err) {
  int rc = env_lock_shared(io, dir, lock, err); /* the engines flock a directory they open */
  if (rc == BFH_E_BUSY) return err_set(err, rc, "%s: database is open: close it to check", dir);
  if (rc != BFH_OK) return rc;
  long holder = foreign_lock_holder(dir);
  if (!holder) return BFH_OK;
  env_unlock(*lock);
  *lock = NULL;
  return err_set(err, BFH_E_BUSY,
                 "%s: database is open in process %ld (it holds %s's LOCK): close it to check%s",
                 dir, holder, engine, hint);
}

long foreign_lock_holder(const char *dir) {
  char *path = path_join(dir, "LOCK");
  uint64_t size;
  env_file_id_t id;
  int found = path && env_path_stat(env_default(), path, &size, &id, NULL) == BFH_OK;
  free(path);
  if (!found) return 0; /* no memory: as a LOCK not found (the engine's open says more) */
  FILE *f = fopen("/proc/locks", "r");
  if (!f) return 0;
  long holder = 0;
  char line[256];
  while (!holder && fgets(line, sizeof line, f)) {
    /* "1: POSIX  ADVISORY  WRITE 4242 08:01:1234567 0 EOF"; blocked waiters have "->". */
    long pid;
    unsigned maj, min;
    unsigned long long ino;
    char kind[16];
    if (strstr(line, "->") ||
        sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%llu", kind, &pid, &maj, &min, &ino) != 5)
      continue;
    if (strcmp(kind, "POSIX") == 0 && ino == (unsigned long long)id.ino &&
        maj == major((dev_t)id.dev) && min == minor((dev_t)id.dev))
      holder = pid;
  }
  fclose(f);
  return holder;
}

struct foreign_repair_lock {
  env_lock_t *dir;  /* the flock on the directory: no bfh handle has it open */
  env_lock_t *lock; /* the POSIX lock on LOCK: no LevelDB or RocksDB process has it open */
};

int foreign_repair_lock(const char *dir, const char *engine, foreign_repair_lock_t **lock,
                        err_t *err) {
  *lock = NULL;
  env_t *io = env_default();
  foreign_repair_lock_t *l = calloc(1, sizeof *l);
  if (!l) return err_set(err, BFH_E_NOMEM, "%s: no memory", dir);
  int rc = env_lock_dir(io, dir, &l->dir, err);
  if (rc == BFH_E_BUSY)
    err_set(err, BFH_E_BUSY, "%s: database is open in a bfh handle: close it to repair", dir);
  long holder = rc == BFH_OK ? foreign_lock_holder(dir) : 0;
  if (holder)
    rc = err_set(err, BFH_E_BUSY,
                 "%s: database is open in process %ld%s (it holds %s's LOCK): close it to "
                 "repair",
                 dir, holder, holder == (long)getpid() ? " (this one)" : "", engine);
  char *p = rc == BFH_OK ? path_join(dir, "LOCK") : NULL;
  if (rc == BFH_OK && !p) rc = err_set(err, BFH_E_NOMEM, "%s/LOCK: no memory for its path", dir);
  if (rc == BFH_OK && (rc = env_lock_record(io, p, &l->lock, err)) == BFH_E_BUSY)
    err_set(err, BFH_E_BUSY,
            "%s: database is open in another process (it holds %s's LOCK): close it to repair",
            dir, engine);
  free(p);
  if (rc != BFH_OK) {
    foreign_repair_unlock(l);
    return rc;
  }
  *lock = l;
  return BFH_OK;
}

void foreign_repair_unlock(foreign_repair_lock_t *lock) {
  if (!lock) return;
  env_unlock(lock->lock); /* closing the file drops its POSIX lock */
  env_unlock(lock->dir);
  free(lock);
}
