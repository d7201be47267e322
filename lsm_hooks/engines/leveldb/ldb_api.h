/* The LevelDB C API (leveldb/c.h), bound at the first open of a LevelDB engine rather than
 * linked (util/dynlib.h says why): the engine files that call it include this header. */
#ifndef BFH_LSM_HOOKS_LEVELDB_LDB_API_H
#define BFH_LSM_HOOKS_LEVELDB_LDB_API_H

#include <leveldb/c.h>

#include "util/dynlib.h"

/* The functions bfh calls: X(P, name) for each function P_name (P = leveldb). */
#define LDB_API_FUNCTIONS(X, P) \
  X(P, close) \
  X(P, compact_range) \
  X(P, create_iterator) \
  X(P, delete) \
  X(P, filterpolicy_create_bloom) \
  X(P, filterpolicy_destroy) \
  X(P, free) \
  X(P, get) \
  X(P, iter_destroy) \
  X(P, iter_get_error) \
  X(P, iter_key) \
  X(P, iter_next) \
  X(P, iter_seek) \
  X(P, iter_seek_to_first) \
  X(P, iter_valid) \
  X(P, iter_value) \
  X(P, open) \
  X(P, options_create) \
  X(P, options_destroy) \
  X(P, options_set_compression) \
  X(P, options_set_create_if_missing) \
  X(P, options_set_filter_policy) \
  X(P, options_set_max_file_size) \
  X(P, options_set_paranoid_checks) \
  X(P, options_set_write_buffer_size) \
  X(P, property_value) \
  X(P, put) \
  X(P, readoptions_create) \
  X(P, readoptions_destroy) \
  X(P, readoptions_set_fill_cache) \
  X(P, readoptions_set_verify_checksums) \
  X(P, repair_db) \
  X(P, write) \
  X(P, writebatch_create) \
  X(P, writebatch_destroy) \
  X(P, writeoptions_create) \
  X(P, writeoptions_destroy) \
  X(P, writeoptions_set_sync)

typedef DYNLIB_TABLE(LDB_API_FUNCTIONS, leveldb) ldb_api_fns_t;

extern ldb_api_fns_t ldb_api;

/* Binds libleveldb (dynlib_bind): ST_OK, or ST_E_UNSUPPORTED naming the library and its package.
 * Every entry point of the engine calls it before its first leveldb_ call. */
int ldb_api_bind(err_t *err);

/* The API's names, each its pointer: call sites read as calls of the C API. */
#define leveldb_close ldb_api.f.close
#define leveldb_compact_range ldb_api.f.compact_range
#define leveldb_create_iterator ldb_api.f.create_iterator
#define leveldb_delete ldb_api.f.delete
#define leveldb_filterpolicy_create_bloom ldb_api.f.filterpolicy_create_bloom
#define leveldb_filterpolicy_destroy ldb_api.f.filterpolicy_destroy
#define leveldb_free ldb_api.f.free
#define leveldb_get ldb_api.f.get
#define leveldb_iter_destroy ldb_api.f.iter_destroy
#define leveldb_iter_get_error ldb_api.f.iter_get_error
#define leveldb_iter_key ldb_api.f.iter_key
#define leveldb_iter_next ldb_api.f.iter_next
#define leveldb_iter_seek ldb_api.f.iter_seek
#define leveldb_iter_seek_to_first ldb_api.f.iter_seek_to_first
#define leveldb_iter_valid ldb_api.f.iter_valid
#define leveldb_iter_value ldb_api.f.iter_value
#define leveldb_open ldb_api.f.open
#define leveldb_options_create ldb_api.f.options_create
#define leveldb_options_destroy ldb_api.f.options_destroy
#define leveldb_options_set_compression ldb_api.f.options_set_compression
#define leveldb_options_set_create_if_missing ldb_api.f.options_set_create_if_missing
#define leveldb_options_set_filter_policy ldb_api.f.options_set_filter_policy
#define leveldb_options_set_max_file_size ldb_api.f.options_set_max_file_size
#define leveldb_options_set_paranoid_checks ldb_api.f.options_set_paranoid_checks
#define leveldb_options_set_write_buffer_size ldb_api.f.options_set_write_buffer_size
#define leveldb_property_value ldb_api.f.property_value
#define leveldb_put ldb_api.f.put
#define leveldb_readoptions_create ldb_api.f.readoptions_create
#define leveldb_readoptions_destroy ldb_api.f.readoptions_destroy
#define leveldb_readoptions_set_fill_cache ldb_api.f.readoptions_set_fill_cache
#define leveldb_readoptions_set_verify_checksums ldb_api.f.readoptions_set_verify_checksums
#define leveldb_repair_db ldb_api.f.repair_db
#define leveldb_write ldb_api.f.write
#define leveldb_writebatch_create ldb_api.f.writebatch_create
#define leveldb_writebatch_destroy ldb_api.f.writebatch_destroy
#define leveldb_writeoptions_create ldb_api.f.writeoptions_create
#define leveldb_writeoptions_destroy ldb_api.f.writeoptions_destroy
#define leveldb_writeoptions_set_sync ldb_api.f.writeoptions_set_sync

#endif
