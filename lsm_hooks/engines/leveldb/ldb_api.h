/* The LevelDB C API (leveldb/c.h), bound at the first open of a LevelDB engine rather than
 * linked (util/dynlib.h says why): include this header, not leveldb/c.h. */
#ifndef BFH_LSM_HOOKS_LEVELDB_LDB_API_H
#define BFH_LSM_HOOKS_LEVELDB_LDB_API_H

#include <leveldb/c.h>

#include "util/dynlib.h"

/* The functions bfh calls, X(name) for leveldb_name. */
#define LDB_API_FUNCTIONS(X) \
  X(close) \
  X(compact_range) \
  X(create_iterator) \
  X(delete) \
  X(filterpolicy_create_bloom) \
  X(filterpolicy_destroy) \
  X(free) \
  X(get) \
  X(iter_destroy) \
  X(iter_get_error) \
  X(iter_key) \
  X(iter_next) \
  X(iter_seek) \
  X(iter_seek_to_first) \
  X(iter_valid) \
  X(iter_value) \
  X(open) \
  X(options_create) \
  X(options_destroy) \
  X(options_set_compression) \
  X(options_set_create_if_missing) \
  X(options_set_filter_policy) \
  X(options_set_max_file_size) \
  X(options_set_paranoid_checks) \
  X(options_set_write_buffer_size) \
  X(property_value) \
  X(put) \
  X(readoptions_create) \
  X(readoptions_destroy) \
  X(readoptions_set_fill_cache) \
  X(readoptions_set_verify_checksums) \
  X(repair_db) \
  X(write) \
  X(writebatch_create) \
  X(writebatch_destroy) \
  X(writeoptions_create) \
  X(writeoptions_destroy) \
  X(writeoptions_set_sync)

typedef union ldb_api_fns {
  struct {
#define LDB_API_FIELD(name) __typeof__(leveldb_##name) *name;
    LDB_API_FUNCTIONS(LDB_API_FIELD)
#undef LDB_API_FIELD
  } f;
#define LDB_API_ONE(name) +1
  void *p[0 LDB_API_FUNCTIONS(LDB_API_ONE)];
#undef LDB_API_ONE
} ldb_api_fns_t;

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
