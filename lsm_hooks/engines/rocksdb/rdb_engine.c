/* engine_t over stock RocksDB (Debian's 7.8.3) through its C API, one of its column families
 * (bfh_options.column_family, the default one when NULL; doc/rocksdb.md, "The read-write engine"
 * and "Column families"); views, the WAL and the table reads are described
 * in rdb_adapter.h.
 *
 * put, delete and get go to rocksdb_put / rocksdb_delete / rocksdb_get. RocksDB opens with its
 * defaults (snappy, block-based tables of format_version 5, paranoid_checks) plus a bloom key
 * filter of key_bits_per_key bits (default 10), and bfh_options' memtable and table sizes when
 * set. No merge operator is set and blob files stay off: a database that has merge operands or
 * blob references is refused by the search (rdb_reads.c, rdb_wal.c), never answered wrongly.
 * flush: rocksdb_flush (waiting), then the new table is indexed.
 */
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/engines/foreign_check.h"
#include "lsm_hooks/engines/engine_detect.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/engines/rocksdb/rdb_api.h"
#include "lsm_hooks/rocksdb_format/rdb_manifest.h"
#include "util/path.h"

/* Maps a RocksDB error string to a status, sets err, frees msg. RocksDB 7.8.3 says a LOCK
   held elsewhere as "IO error: While lock file: DIR/LOCK: ..." (another process) or "IO
   error: lock hold by current process, ..." (this one); any other IO error is one, even
   when a path in it contains "lock" (/data/block/...). */
static int rdb_error(const char *path, char *msg, const char *op, err_t *err) {
  int rc = BFH_E_IO;
  if (strstr(msg, "Corruption"))
    rc = BFH_E_CORRUPT;
  else if (!strncmp(msg, "IO error: While lock file: ", 27) ||
           !strncmp(msg, "IO error: lock hold by current process", 38))
    rc = BFH_E_BUSY;
  else if (strstr(msg, "Invalid argument"))
    rc = BFH_E_INVALID;
  else if (strstr(msg, "Not implemented") || strstr(msg, "Not supported"))
    rc = BFH_E_UNSUPPORTED;
  err_set(err, rc, "%s: %s: %s", path, op, msg);
  rocksdb_free(msg);
  return rc;
}

/* stock_rw_format_t.shut and destroy. */
static void shut(stock_rw_t *s) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)s;
  if (er->db) rdb_tick(s); /* no view is open at close: the hold is given back */
  rdb_wal_drop(er);
  for (size_t i = 0; i < er->ncfs; i++)
    if (er->cfs[i]) rocksdb_column_family_handle_destroy(er->cfs[i]);
  free(er->cfs);
  er->cfs = NULL;
  er->ncfs = 0;
  if (er->db) rocksdb_close(er->db);
  er->db = NULL;
}

static void destroy(stock_rw_t *s) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)s;
  stock_segs_release(&er->segs);
  free(er->listed);
  free(er->cf_name);
  if (er->options) rocksdb_options_destroy(er->options);
  if (er->ropt) rocksdb_readoptions_destroy(er->ropt);
  if (er->wopt) rocksdb_writeoptions_destroy(er->wopt);
  if (er->fopt) rocksdb_flushoptions_destroy(er->fopt);
  pthread_mutex_destroy(&er->hold_mu);
}

static int e_put(engine_t *e, const void *key, size_t key_len, const void *val, size_t val_len,
                 err_t *err) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)e;
  char *msg = NULL;
  rocksdb_put_cf(er->db, er->wopt, er->cf, key, key_len, val, val_len, &msg);
  return msg ? rdb_error(er->rw.path, msg, "put", err) : BFH_OK;
}

static int e_del(engine_t *e, const void *key, size_t key_len, err_t *err) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)e;
  char *msg = NULL;
  rocksdb_delete_cf(er->db, er->wopt, er->cf, key, key_len, &msg);
  return msg ? rdb_error(er->rw.path, msg, "delete", err) : BFH_OK;
}

/* Reads the newest version, also under a search's view (engine.h). */
static int e_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
                 size_t *val_len, err_t *err) {
  (void)view;
  engine_rocksdb_t *er = (engine_rocksdb_t *)e;
  char *msg = NULL;
  size_t n = 0;
  char *v = rocksdb_get_cf(er->db, er->ropt, er->cf, key, key_len, &n, &msg); /* malloc'd */
  if (msg) {
    rocksdb_free(v);
    return rdb_error(er->rw.path, msg, "get", err);
  }
  return stock_rw_get_result(er->rw.path, v, n, rocksdb_free, val, val_len, err);
}

static int e_flush(engine_t *e, err_t *err) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)e;
  char *msg = NULL;
  rocksdb_flush_cf(er->db, er->fopt, er->cf, &msg);
  if (msg) return rdb_error(er->rw.path, msg, "flush", err);
  return stock_rw_sync(&er->rw, STOCK_SYNC_FULL, NULL, err);
}

/* ---- Ordered iteration: RocksDB's own iterator (an implicit snapshot at its creation) ---- */

STOCK_LIB_ITER(rocksdb, rdb_error)

static int e_iter_create(engine_t *e, engine_iter_t **out, err_t *err) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)e;
  *out = lib_iter_wrap(rocksdb_create_iterator_cf(er->db, er->ropt, er->cf), er->rw.path);
  return *out ? BFH_OK : err_set(err, BFH_E_NOMEM, "%s: iterator: out of memory", er->rw.path);
}

static const engine_ops_t rocksdb_ops = {STOCK_RW_OPS_FIELDS("rocksdb")};

/* ---- Opening ---------------------------------------------------------------------------- */

/* stock_rw_format_t.check_dir: what path must be before RocksDB may open or create a database
   in it (RocksDB itself would create a missing directory even with create_if_missing off), and
   the column family (a new database has none but "default"). */
static int check_directory(env_t *io, const char *path, const bfh_options *opt, err_t *err) {
  int create = opt->create_if_missing, exists;
  int rc = stock_rw_check_dir(io, path, create, &exists, err);
  if (rc != BFH_OK) return rc;
  int other_cf = opt->column_family && strcmp(opt->column_family, "default") != 0, has = 0;
  if (exists) {
    if ((rc = engine_detect_check(path, ENGINE_DIR_ROCKSDB, err)) != BFH_OK) return rc;
    long holder = foreign_lock_holder(path); /* RocksDB's LOCK is a POSIX lock */
    if (holder)
      return err_set(err, BFH_E_BUSY,
                     "%s: database is open in process %ld (it holds RocksDB's LOCK)", path, holder);
    /* A directory whose CURRENT is lost still holds the database's tables and logs: RocksDB
       would create a fresh, empty database over them (create_if_missing), and its next open
       would delete them as obsolete. A damaged WAL record would end RocksDB's replay there,
       dropping the writes after it. Both are refused first (rdb_verify.c). */
    if ((rc = rdb_verify_precheck(io, path, err)) != BFH_OK) return rc;
    if ((!create || other_cf) && (rc = stock_file_exists(io, path, "CURRENT", &has, err)) != BFH_OK)
      return rc;
  }
  if (!has && !create)
    return err_set(err, BFH_E_INVALID,
                   "%s: not a RocksDB database (no CURRENT file; create_if_missing is off)", path);
  if (!has && other_cf)
    return err_set(err, BFH_E_INVALID,
                   "%s: no column family '%s' (a new database has only \"default\"; bfh creates "
                   "none: create it with RocksDB); nothing was written",
                   path, opt->column_family);
  return BFH_OK;
}

static void set_options(engine_rocksdb_t *er, const bfh_options *opt) {
  er->options = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(er->options, opt->create_if_missing != 0);
  rocksdb_options_set_paranoid_checks(er->options, 1);
  if (opt->compression == BFH_COMPRESSION_NONE)
    rocksdb_options_set_compression(er->options, rocksdb_no_compression);
  else if (opt->compression == BFH_COMPRESSION_SNAPPY)
    rocksdb_options_set_compression(er->options, rocksdb_snappy_compression);
  if (opt->memtable_bytes) rocksdb_options_set_write_buffer_size(er->options, opt->memtable_bytes);
  if (opt->table_bytes) rocksdb_options_set_target_file_size_base(er->options, opt->table_bytes);
  rocksdb_block_based_table_options_t *bb = rocksdb_block_based_options_create();
  double bits = opt->key_bits_per_key > 0 ? opt->key_bits_per_key : 10;
  rocksdb_block_based_options_set_filter_policy(bb, rocksdb_filterpolicy_create_bloom(bits));
  rocksdb_options_set_block_based_table_factory(er->options, bb); /* copies bb's settings */
  rocksdb_block_based_options_destroy(bb);
  er->ropt = rocksdb_readoptions_create();
  rocksdb_readoptions_set_verify_checksums(er->ropt, 1);
  er->wopt = rocksdb_writeoptions_create();
  rocksdb_writeoptions_set_sync(er->wopt, opt->sync != 0);
  er->fopt = rocksdb_flushoptions_create();
  rocksdb_flushoptions_set_wait(er->fopt, 1);
}

/* rocksdb_open_column_families with every family the database has (RocksDB opens all or none;
   just the default one for a new database), then the one named (NULL: "default") chosen. */
static int open_families(engine_rocksdb_t *er, const char *want, err_t *err) {
  const char *name = want ? want : "default";
  char *msg = NULL;
  size_t n = 0;
  char **names = NULL;
  int has;
  int rc = stock_file_exists(env_default(), er->rw.path, "CURRENT", &has, err);
  if (rc != BFH_OK) return rc;
  if (has) {
    names = rocksdb_list_column_families(er->options, er->rw.path, &n, &msg);
    if (msg) return rdb_error(er->rw.path, msg, "list column families", err);
  }
  static const char *const default_only[] = {"default"};
  const char *const *list = names ? (const char *const *)names : default_only;
  if (!names) n = 1;
  size_t at = n;
  for (size_t i = 0; i < n; i++)
    if (strcmp(list[i], name) == 0) at = i;
  if (at == n)
    rc = err_set(err, BFH_E_INVALID,
                 "%s: no column family '%s' (bfh creates none: create it with RocksDB)",
                 er->rw.path, name);
  const rocksdb_options_t **opts = NULL;
  if (rc == BFH_OK) {
    opts = malloc(n * sizeof *opts);
    er->cfs = calloc(n, sizeof *er->cfs);
    er->cf_name = strdup(name);
    if (!opts || !er->cfs || !er->cf_name)
      rc = err_set(err, BFH_E_NOMEM, "%s: no memory", er->rw.path);
  }
  if (rc == BFH_OK) {
    for (size_t i = 0; i < n; i++) opts[i] = er->options;
    er->db = rocksdb_open_column_families(er->options, er->rw.path, (int)n,
                                          (const char *const *)list, opts, er->cfs, &msg);
    if (msg) {
      er->db = NULL;
      rc = rdb_error(er->rw.path, msg, "open", err);
      for (size_t i = 0; i < n; i++) er->cfs[i] = NULL;
    } else {
      er->ncfs = n;
      er->cf = er->cfs[at];
      er->cf_id = rocksdb_column_family_handle_get_id(er->cf);
    }
  }
  free(opts);
  if (names) rocksdb_list_column_families_destroy(names, n);
  return rc;
}

static void init(stock_rw_t *s) {
  pthread_mutex_init(&((engine_rocksdb_t *)s)->hold_mu, NULL);
}

/* stock_rw_format_t.open. */
static int open_db(stock_rw_t *s, const bfh_options *opt, err_t *err) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)s;
  set_options(er, opt);
  int rc = open_families(er, opt->column_family, err);
  if (rc == BFH_E_CORRUPT && err) rdb_verify_name_damage(s->io, s->path, err);
  return rc;
}

static const stock_rw_format_t rocksdb_format = {.ops = &rocksdb_ops,
                                                 .table_match = rdb_table_match,
                                                 .file_open = rdb_file_open,
                                                 .file_free = stock_file_free,
                                                 .file_match = rdb_file_match,
                                                 .file_keep = rdb_file_keep,
                                                 .table_hashes = rdb_table_hashes,
                                                 .leaf_read = rdb_leaf_read,
                                                 .table_tag = rdb_table_tag_of,
                                                 .cache_delay_ns = ENGINE_ROCKSDB_CACHE_DELAY_NS,
                                                 .block_maps = 1,
                                                 .lib = "RocksDB",
                                                 .bind = rdb_api_bind,
                                                 .handle_size = sizeof(engine_rocksdb_t),
                                                 .check_dir = check_directory,
                                                 .init = init,
                                                 .open = open_db,
                                                 .shut = shut,
                                                 .destroy = destroy,
                                                 .list_at_rest = rdb_list_at_rest,
                                                 .list = rdb_list,
                                                 .unhold = rdb_unhold,
                                                 .segs = rdb_segs,
                                                 .tick = rdb_tick};

int engine_rocksdb_open(const char *path, const bfh_options *opt, struct env *io,
                        index_sync_t *sync, engine_t **out, err_t *err) {
  return stock_rw_open(&rocksdb_format, path, opt, io, sync, out, err);
}

/* Counts the damage bfh's check finds before RocksDB's repair (arg: the report, may be NULL): a
   damaged table is moved to lost/ whole by RocksDB's repair (all its keys leave the database). */
static void count_damage(void *arg, const char *file, uint64_t offset, const char *what) {
  (void)offset, (void)what;
  bfh_repair_report *rep = arg;
  uint64_t num;
  if (rep && stock_table_file_number(file, &num)) rep->tables_lost++;
}

/* The entries of dir/lost/ (0 if it does not exist, or cannot be listed: a count for the
   report only). */
static uint64_t lost_entries(const char *dir) {
  char *path = path_join(dir, "lost");
  char **names = NULL;
  size_t n = 0;
  err_t e;
  int listed = path && env_exists(env_default(), path) &&
               env_list_dir(env_default(), path, &names, &n, &e) == BFH_OK;
  free(path);
  if (!listed) return 0;
  env_names_free(names, n);
  return n;
}

int engine_rocksdb_repair_lock(const char *path, void **lock, err_t *err) {
  *lock = NULL;
  env_path_type_t type;
  if (env_path_kind(env_default(), path, &type, NULL) != BFH_OK || type != ENV_PATH_DIR)
    return err_set(err, BFH_E_INVALID, "%s: not a directory: nothing to repair", path);
  int rc = engine_detect_check(path, ENGINE_DIR_ROCKSDB, err);
  if (rc == BFH_OK) rc = engine_detect_special_files(path, err); /* RepairDB would wait on a FIFO */
  if (rc != BFH_OK) return rc;
  if (engine_detect_dir(path) != ENGINE_DIR_ROCKSDB)
    return err_set(err, BFH_E_INVALID, "%s: not a RocksDB database: nothing to repair", path);
  return foreign_repair_lock(path, "RocksDB", (foreign_repair_lock_t **)lock, err);
}

int engine_rocksdb_repair(const char *dir, const bfh_options *opt, bfh_repair_report *rep,
                          err_t *err) {
  (void)opt;
  if (rdb_api_bind(err) != BFH_OK) return err_prefix(err, "%s: RocksDB's repair needs ", dir);
  /* What RocksDB's repair will drop, counted first with bfh's readers. */
  engine_check_stats_t st = {0};
  uint64_t cache_damaged = 0;
  const engine_filter_params_t no_cache = {0};
  int rc = rdb_verify_check(dir, &no_cache, count_damage, rep, &st, &cache_damaged, err);
  if (rc != BFH_OK) return rc;
  uint64_t lost_before = lost_entries(dir);
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(o, 0);
  char *msg = NULL;
  rocksdb_repair_db(o, dir, &msg);
  rocksdb_options_destroy(o);
  if (msg) return rdb_error(dir, msg, "repair", err);
  if (rep) {
    uint64_t after = lost_entries(dir);
    rep->files_moved = after > lost_before ? after - lost_before : 0;
  }
  return BFH_OK;
}

int engine_rocksdb_families(const char *path, char ***names, size_t *n, err_t *err) {
  *names = NULL;
  *n = 0;
  rdb_version_t v = {0};
  int rc = rdb_version_load(env_default(), path, 0, &v, NULL, NULL, err);
  char **out = rc == BFH_OK ? calloc(v.ncfs ? v.ncfs : 1, sizeof *out) : NULL;
  if (rc == BFH_OK && !out) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  size_t k = 0;
  for (; rc == BFH_OK && k < v.ncfs; k++)
    if (!(out[k] = strdup(v.cfs[k].name))) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  rdb_version_release(&v);
  if (rc != BFH_OK) {
    env_names_free(out, k);
    return rc;
  }
  *names = out;
  *n = k;
  return BFH_OK;
}
