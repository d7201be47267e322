/* bfh_stats, bfh_stored_params, bfh_engine_detect and the inspection calls (bfh_tables,
 * bfh_check; the work is db_inspect.c's). */
#include <stdlib.h>
#include <string.h>

#include "api/db_inspect.h"
#include "api/db_params.h"
#include "api/handle.h"
#include "lsm_hooks/engines/engine_detect.h"
#include "util/vec.h"

/* The Cuckoo Index's counters, of the live tables only: the pieces of tables that left the
   version since the last CUCKOO search (a compaction's inputs) are dropped first. */
static int cuckoo_stats(bfh_db *db, const engine_table_t *tables, size_t n,
                        cuckoo_index_stats_t *cs) {
  uint64_t *live = malloc((n ? n : 1) * sizeof *live);
  if (!live) return api_failf(db, BFH_E_NOMEM, "bfh_stats: out of memory");
  for (size_t i = 0; i < n; i++) live[i] = tables[i].number;
  qsort(live, n, sizeof *live, u64_compare);
  cuckoo_index_lock(db->cuckoo);
  if (cuckoo_index_retain(db->cuckoo, live, n))
    cuckoo_index_set_synced(db->cuckoo, 0); /* the next CUCKOO search compares its list */
  cuckoo_index_get_stats(db->cuckoo, cs);
  cuckoo_index_unlock(db->cuckoo);
  free(live);
  return BFH_OK;
}

static int db_stats(bfh_db *db, bfh_db_stats *st) {
  memset(st, 0, sizeof *st);
  err_t err;
  err_clear(&err);
  /* The table list comes from a view, so that it is the same one a search would see. */
  engine_view_t *view;
  int rc = engine_view_acquire(db->engine, &view, &err);
  if (rc != BFH_OK) return api_fail(db, rc, &err);
  const engine_table_t *tables;
  size_t n = engine_view_tables(db->engine, view, &tables);
  st->tables = n;
  for (size_t i = 0; i < n; i++) st->table_bytes += tables[i].size;
  cuckoo_index_stats_t cs = {0};
  if (db->cuckoo) rc = cuckoo_stats(db, tables, n, &cs);
  engine_view_release(db->engine, view);
  if (rc != BFH_OK) return rc;
  engine_stats(db->engine, st);
  st->attributes = (uint32_t)terms_count(db->terms);
  st->attribute_values_without_term = terms_without_term_total(db->terms);
  if (db->standalone) {
    standalone_stats_t ss;
    standalone_get_stats(db->standalone, &ss);
    st->standalone_index = 1;
    st->standalone_entries = ss.entries_put;
    st->standalone_tables = ss.tables;
    st->standalone_bytes = ss.bytes;
    st->standalone_bytes_written = ss.bytes_written;
    st->old_value_reads = ss.old_reads;
    st->old_value_read_ns = ss.old_read_ns;
  }
  if (db->index) {
    /* The index as loaded: a handle still reading its leaves (index_sync.h "Loading at
       open") finishes first. */
    if (db->sync) (void)index_sync_loader_wait(db->sync, NULL, NULL);
    value_index_stats_t vs;
    value_index_get_stats(db->index, &vs);
    st->leaf_filters = vs.leaves;
    st->leaf_filter_bytes = vs.leaf_bytes_total;
    st->internal_bytes = vs.internal_bytes;
    st->sliced_bytes = vs.sliced_bytes;
    st->hierarchy_height = vs.height;
    st->mean_leaf_fill = vs.mean_fill;
    st->leaf_memory_bytes = vs.leaf_bytes;
    /* What the index was built with: m, k and seed are the stored ones (open checked them). */
    const value_index_params_t *p = value_index_params(db->index);
    st->value_filters = 1;
    st->value_filter_bits = p->m;
    st->value_filter_hashes = p->k;
    st->order = p->order;
    st->placement = (int)p->placement;
    st->hash_seed = p->seed;
    block_index_stats_t bs;
    block_index_get_stats(value_index_blocks(db->index), &bs);
    index_sync_stats_t ss;
    index_sync_get_stats(db->sync, &ss);
    st->block_filter_tables = bs.tables;
    st->block_filter_bytes = bs.bytes;
    st->block_filters_damaged = bs.damaged + ss.blocks_damaged;
    st->index_bytes = vs.index_bytes;
    st->index_load_peak_bytes = vs.load_peak_bytes;
    st->leaf_chunks_damaged = vs.fold_damaged;
  }
  if (db->cuckoo) {
    st->cuckoo_bytes = cs.bytes;
    st->cuckoo_tables = cs.tables;
    st->index_bytes += cs.bytes;
  }
  return BFH_OK;
}

int bfh_stats_sized(bfh_db *db, bfh_db_stats *st, size_t st_size) {
  CHECK_DB("bfh_stats");
  if (!st) return invalid(db, "bfh_stats: st is NULL");
  bfh_db_stats full;
  int rc = db_stats(db, &full);
  api_copy_out(st, st_size, &full, sizeof full);
  return rc;
}

int bfh_attribute_stats(bfh_db *db, size_t i, const char **name, const char **extractor,
                        uint64_t *values_without_term) {
  CHECK_DB("bfh_attribute_stats");
  if (i >= terms_count(db->terms)) return BFH_NOT_FOUND;
  const attr_spec_t *spec = terms_spec(db->terms, i);
  if (name) *name = spec->name;
  /* The canonical declaration, formatted once per attribute into the handle's memory. */
  if (extractor) *extractor = terms_extractor_text(db->terms, i);
  if (values_without_term) {
    terms_stats_t ts;
    terms_stats(db->terms, i, &ts);
    *values_without_term = ts.without_term;
  }
  return BFH_OK;
}

int bfh_engine_detect(const char *path, bfh_engine *engine) {
  if (!path || !path[0] || !engine)
    return invalid(NULL, "bfh_engine_detect: path is NULL or empty, or engine is NULL");
  switch (engine_detect_dir(path)) {
    case ENGINE_DIR_LSM:
      *engine = BFH_ENGINE_LSM;
      return BFH_OK;
    case ENGINE_DIR_LEVELDB:
      *engine = BFH_ENGINE_LEVELDB;
      return BFH_OK;
    case ENGINE_DIR_ROCKSDB:
      *engine = BFH_ENGINE_ROCKSDB;
      return BFH_OK;
    default:
      return invalid(NULL, "%s: no database of a known engine (bfh's own, LevelDB, RocksDB)",
                     path);
  }
}

int bfh_stored_params(const char *path, bfh_options *opt) {
  if (!path || !path[0] || !opt)
    return invalid(NULL, "bfh_stored_params: path is NULL or empty, or opt is NULL");
  bfh_options o;
  int rc = api_options_copy_in("bfh_stored_params", opt, &o);
  if (rc != BFH_OK) return rc;
  db_params_t p;
  err_t err;
  err_clear(&err);
  rc = db_params_read(env_default(), path, &p, &err);
  if (rc != BFH_OK) return rc == BFH_NOT_FOUND ? rc : api_fail(NULL, rc, &err);
  o.value_filter_bits = p.m;
  o.value_filter_hashes = p.k;
  o.hash_seed = p.seed;
  o.struct_size = opt->struct_size;
  api_copy_out(opt, opt->struct_size, &o, sizeof o); /* only the fields the caller has */
  return BFH_OK;
}

/* ---- Inspection (api/db_inspect.h) ------------------------------------------------- */

int bfh_tables(bfh_db *db, bfh_table_fn fn, void *arg) {
  CHECK_DB("bfh_tables");
  if (!fn) return invalid(db, "bfh_tables: fn is NULL");
  err_t err;
  err_clear(&err);
  int rc = db_inspect_tables(db->engine, db->kind, db->index, db->sync, fn, arg, &err);
  return rc == BFH_OK ? BFH_OK : api_fail(db, rc, &err);
}

int bfh_check_sized(const char *path, const bfh_options *opt_in, bfh_damage_fn fn, void *arg,
                    bfh_check_report *report, size_t report_size) {
  if (!path || !path[0]) return invalid(NULL, "bfh_check: path is NULL or empty");
  bfh_options opt;
  int rc = api_options_or_defaults("bfh_check", opt_in, &opt);
  if (rc != BFH_OK) return rc;
  bfh_check_report rep;
  memset(&rep, 0, sizeof rep);
  err_t err;
  err_clear(&err);
  const engine_kind_t *kind = engine_kind(opt.engine);
  if (!(kind->caps & ENGINE_CAP_CHECK))
    return api_failf(NULL, BFH_E_UNSUPPORTED, "bfh_check: the %s engine has no check", kind->name);
  rc = db_inspect_check(path, kind, fn, arg, &rep, &err);
  if (report) api_copy_out(report, report_size, &rep, sizeof rep);
  return rc == BFH_OK ? BFH_OK : api_fail(NULL, rc, &err);
}
