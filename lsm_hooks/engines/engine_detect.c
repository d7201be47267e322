/* engine_detect: which engine wrote a database directory (engine_detect.h). */
#include "lsm_hooks/engines/engine_detect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bfh.h"
#include "lsm/filename.h"
#include "lsm/table.h"
#include "lsm_hooks/engines/stock/stock.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"
#include "util/coding.h"
#include "util/env.h"
#include "util/path.h"

/* Tables whose footers are read: the newest ones, which the engine that owns the directory
   now wrote. A few suffice, and keep the open of a 1,500-table database cheap. */
#define TABLES_READ 8

#define IDENTITY_NOT_OWN "its IDENTITY file is not bfh's"

/* The first bytes of path/IDENTITY: 1 if it is bfh's own engine's, 0 if another's, -1 if
   there is none (or it cannot be read, or there is no memory for its path). */
static int identity_is_own(const char *path) {
  char *p = path_join(path, "IDENTITY");
  env_rfile_t *f;
  int opened = p && env_open_read(env_default(), p, &f, NULL) == ST_OK; /* a FIFO never blocks */
  free(p);
  if (!opened) return -1;
  char head[8];
  size_t n = 0;
  int rc = env_rfile_pread(f, 0, head, sizeof head, &n, NULL);
  env_rfile_close(f);
  if (rc != ST_OK) return -1;
  /* An own IDENTITY damaged in a byte or two is still the own engine's (lsm/filename.c says
     so when it reads it); RocksDB's UUID text shares nothing with the magic. */
  int same = 0;
  for (size_t i = 0; i < n; i++) same += head[i] == LSM_IDENTITY_MAGIC[i];
  return n == 0 || same + 2 >= (int)sizeof head;
}

/* The name of an OPTIONS-* file of path into out, or "" if none. */
static void options_file(const char *path, char *out, size_t n) {
  out[0] = 0;
  char **names;
  size_t cnt;
  if (env_list_dir(env_default(), path, &names, &cnt, NULL) != ST_OK) return;
  for (size_t i = 0; i < cnt && !out[0]; i++)
    if (!strncmp(names[i], "OPTIONS-", 8)) snprintf(out, n, "%s", names[i]);
  env_names_free(names, cnt);
}

uint64_t engine_detect_table_magic(const char *path) {
  env_rfile_t *f;
  if (env_open_read(env_default(), path, &f, NULL) != ST_OK) return 0;
  uint8_t tail[8];
  size_t got = 0;
  uint64_t size = env_rfile_size(f), magic = 0;
  if (size >= 8 && env_rfile_pread(f, size - 8, tail, 8, &got, NULL) == ST_OK && got == 8)
    magic = decode_fixed64(tail);
  env_rfile_close(f);
  return magic;
}

static int by_number_desc(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Which engine wrote the newest tables of path (their names, NNNNNN.sst or .ldb, say nothing:
   LevelDB 1.23 reads both and RocksDB too), by the magic number each table ends with.
   ENGINE_DIR_NONE when no table gives a known one. */
static engine_dir_kind_t tables_kind(const char *path) {
  char **names;
  size_t n;
  if (env_list_dir(env_default(), path, &names, &n, NULL) != ST_OK) return ENGINE_DIR_NONE;
  uint64_t *nums = malloc((n ? n : 1) * 2 * sizeof *nums);
  size_t cnt = 0;
  for (size_t i = 0; nums && i < n; i++) {
    uint64_t v;
    if (!stock_table_file_number(names[i], &v)) continue;
    nums[2 * cnt] = v;
    nums[2 * cnt + 1] = strstr(names[i], ".ldb") != NULL;
    cnt++;
  }
  env_names_free(names, n);
  if (cnt) qsort(nums, cnt, 2 * sizeof *nums, by_number_desc);
  engine_dir_kind_t k = ENGINE_DIR_NONE;
  for (size_t i = 0; i < cnt && i < TABLES_READ && k == ENGINE_DIR_NONE; i++) {
    char *p = path_fmt("%s/%06llu.%s", path, (unsigned long long)nums[2 * i],
                       nums[2 * i + 1] ? "ldb" : "sst");
    uint64_t magic = p ? engine_detect_table_magic(p) : 0; /* no memory: a table not known */
    free(p);
    k = magic == TABLE_MAGIC       ? ENGINE_DIR_LSM
        : magic == LDB_TABLE_MAGIC ? ENGINE_DIR_LEVELDB
        : magic == RDB_TABLE_MAGIC ? ENGINE_DIR_ROCKSDB
                                   : ENGINE_DIR_NONE;
  }
  free(nums);
  return k;
}

static engine_dir_kind_t detect(const char *path, char *why, size_t n) {
  int own = identity_is_own(path);
  if (own == 1) {
    snprintf(why, n, "it has bfh's IDENTITY file");
    return ENGINE_DIR_LSM;
  }
  /* The tables before the names of the other files: a stray OPTIONS file (a RocksDB program
     that opened the directory and gave up) does not make a LevelDB database RocksDB's. LevelDB
     never writes an IDENTITY file: tables with LevelDB's magic (RocksDB's format_version 0
     writes it too) beside RocksDB's IDENTITY are RocksDB's. */
  engine_dir_kind_t tk = tables_kind(path);
  if (tk == ENGINE_DIR_ROCKSDB) {
    snprintf(why, n, "its tables end with RocksDB's magic number");
    return tk;
  }
  if (tk == ENGINE_DIR_LEVELDB && own != 0) {
    snprintf(why, n, "its tables end with LevelDB's magic number");
    return tk;
  }
  if (tk == ENGINE_DIR_LSM && own != 0) {
    snprintf(why, n, "its tables end with bfh's magic number");
    return tk;
  }
  char opts[256];
  options_file(path, opts, sizeof opts);
  if (opts[0]) {
    snprintf(why, n, "it has %s", opts);
    return ENGINE_DIR_ROCKSDB;
  }
  if (own == 0) {
    snprintf(why, n, IDENTITY_NOT_OWN);
    return ENGINE_DIR_ROCKSDB;
  }
  char *p = path_join(path, "CURRENT");
  int has_current = p && env_exists(env_default(), p);
  free(p);
  if (has_current) {
    snprintf(why, n, "it has a CURRENT file, but no IDENTITY or OPTIONS file");
    return ENGINE_DIR_LEVELDB;
  }
  why[0] = 0;
  return ENGINE_DIR_NONE;
}

engine_dir_kind_t engine_detect_dir(const char *path) {
  char why[300];
  return detect(path, why, sizeof why);
}

const char *engine_detect_name(engine_dir_kind_t k) {
  switch (k) {
    case ENGINE_DIR_LSM:
      return "lsm";
    case ENGINE_DIR_LEVELDB:
      return "leveldb";
    case ENGINE_DIR_ROCKSDB:
      return "rocksdb";
    default:
      return NULL;
  }
}

static const char *long_name(engine_dir_kind_t k) {
  switch (k) {
    case ENGINE_DIR_LSM:
      return "a bfh (own engine)";
    case ENGINE_DIR_LEVELDB:
      return "a LevelDB";
    case ENGINE_DIR_ROCKSDB:
      return "a RocksDB";
    default:
      return "an unknown";
  }
}

int engine_detect_check(const char *path, engine_dir_kind_t want, err_t *err) {
  char why[300];
  engine_dir_kind_t k = detect(path, why, sizeof why);
  if (k == ENGINE_DIR_NONE || k == want) return BFH_OK;
  /* An IDENTITY that is not bfh's but no OPTIONS file: the own engine's reader says what it
     makes of its damaged IDENTITY (lsm/filename.c). */
  if (want == ENGINE_DIR_LSM && k == ENGINE_DIR_ROCKSDB && !strcmp(why, IDENTITY_NOT_OWN))
    return BFH_OK;
  return err_set(err, BFH_E_INVALID,
                 "%s is %s database (%s), not %s one; open it with the %s engine (--engine "
                 "%s); nothing was written",
                 path, long_name(k), why, long_name(want), engine_detect_name(k),
                 engine_detect_name(k));
}

int engine_detect_special_files(const char *path, err_t *err) {
  char **names;
  env_path_type_t *types;
  size_t n;
  if (env_list_dir_types(env_default(), path, &names, &types, &n, NULL) != ST_OK)
    return BFH_OK; /* the engine's own open says what is wrong with it */
  int rc = BFH_OK;
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    if (types[i] == ENV_PATH_FILE || types[i] == ENV_PATH_DIR) continue; /* no stat needed */
    env_path_type_t t;
    char *p = path_join(path, names[i]);
    if (!p)
      rc = err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", path, names[i]);
    else if (env_path_kind(env_default(), p, &t, NULL) == ST_OK && t != ENV_PATH_FILE &&
             t != ENV_PATH_DIR)
      rc = err_set(err, BFH_E_CORRUPT,
                   "%s: not a regular file (%s): LevelDB and RocksDB would wait on it forever; "
                   "nothing was opened",
                   p, env_path_type_name(t));
    free(p);
  }
  env_names_free(names, n);
  free(types);
  return rc;
}
