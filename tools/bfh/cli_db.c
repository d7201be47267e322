/* Opening the database a bfh command names, and its errors (cli_db.h). */
#include "tools/bfh/cli_db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int cli_db_fail(const cli_t *c, bfh_db *db, const char *what, int rc) {
  fprintf(stderr, "bfh %s: %s: %s: %s\n", c->cmd->name, what, bfh_strerror(rc), bfh_last_error(db));
  bfh_close(db);
  return EXIT_ERROR;
}

int cli_db_close(const cli_t *c, bfh_db *db, int status) {
  int rc = bfh_close(db);
  return rc == BFH_OK ? status : cli_db_fail(c, NULL, "close", rc);
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int cli_db_require(const cli_t *c, const char *dir) {
  if (is_dir(dir)) return 0;
  fprintf(stderr, "bfh %s: %s: no such database (only load and put create one)\n", c->cmd->name,
          dir);
  return EXIT_ERROR;
}

/* The read-only mode's default filter cache: $XDG_CACHE_HOME/bfh/ENGINE-H (or under
   ~/.cache), ENGINE the engine's name (leveldb, rocksdb), H a hash of the database's real
   path, so that each database keeps its own filters across runs, outside its directory.
   NULL: no home to put it in (memory then). */
static char *default_index_dir(const char *dir, const char *engine) {
  char *real = realpath(dir, NULL);
  if (!real) return NULL;
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
  for (const char *p = real; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  free(real);
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char *path = NULL;
  int n = xdg && xdg[0]
              ? asprintf(&path, "%s/bfh/%s-%016llx", xdg, engine, (unsigned long long)h)
          : home && home[0]
              ? asprintf(&path, "%s/.cache/bfh/%s-%016llx", home, engine, (unsigned long long)h)
              : -1;
  return n < 0 ? NULL : path;
}

/* The engine a read-only open reads without: its own program's name. */
static const char *engine_program(bfh_engine e) {
  return e == BFH_ENGINE_ROCKSDB ? "RocksDB" : e == BFH_ENGINE_LEVELDB ? "LevelDB" : "lock";
}

/* A command that only reads opens a database read-only where its engine can (the engine table
   says which: bfh's own, LevelDB, RocksDB) unless --read-write: the program that owns it may
   hold it open, and nothing is written into its directory. The own engine's filters are the
   database's (in its tables): it keeps none elsewhere. --standalone-index opens read-write,
   as --read-write does: the stand-alone index is a read-write handle's. Says so on stderr. *owned: the index
   directory to free after the open. */
static void choose_read_only(cli_t *c, const char *dir, char **owned) {
  *owned = NULL;
  const bfh_engine_info *eng = bfh_engine_get(c->opt.engine);
  if (!(c->cmd->groups & CLI_READ) || !eng || !(eng->caps & BFH_ENGINE_CAN_READ_ONLY) ||
      c->read_write || c->opt.standalone_index) /* a read-only handle keeps no stand-alone index */
    return;
  c->opt.read_only = 1;
  if (c->opt.engine == BFH_ENGINE_LSM) {
    c->opt.index_dir = NULL;
    fprintf(stderr, "bfh %s: reading %s read-only (no LOCK, no write; filters from its tables)\n",
            c->cmd->name, dir);
    return;
  }
  if (c->index_dir && strcmp(c->index_dir, "none") == 0)
    c->opt.index_dir = NULL;
  else
    c->opt.index_dir = c->index_dir ? c->index_dir : (*owned = default_index_dir(dir, eng->name));
  fprintf(stderr, "bfh %s: reading %s read-only (no %s, no LOCK, no write; filters %s%s)\n",
          c->cmd->name, dir, engine_program(c->opt.engine), c->opt.index_dir ? "in " : "in memory",
          c->opt.index_dir ? c->opt.index_dir : "");
}

int cli_db_open(cli_t *c, const char *dir, int create, bfh_db **db) {
  if (!create && cli_db_require(c, dir)) return EXIT_ERROR;
  c->opt.create_if_missing = create;
  char *owned;
  choose_read_only(c, dir, &owned);
  int rc = bfh_open(dir, &c->opt, db);
  c->opt.index_dir = NULL; /* read during the open only */
  free(owned);
  if (rc == BFH_OK) return 0;
  fprintf(stderr, "bfh %s: open %s: %s: %s\n", c->cmd->name, dir, bfh_strerror(rc),
          bfh_last_error(NULL));
  return EXIT_ERROR;
}
