/* The RocksDB C API (rocksdb/c.h), bound at the first open of a RocksDB engine rather than
 * linked (util/dynlib.h says why): the engine files that call it include this header. */
#ifndef BFH_LSM_HOOKS_ROCKSDB_RDB_API_H
#define BFH_LSM_HOOKS_ROCKSDB_RDB_API_H

#include <rocksdb/c.h>

#include "util/dynlib.h"

/* The functions bfh calls: X(P, name) for each function P_name (P = rocksdb). */
#define RDB_API_FUNCTIONS(X, P) \
  X(P, block_based_options_create) \
  X(P, block_based_options_destroy) \
  X(P, block_based_options_set_filter_policy) \
  X(P, close) \
  X(P, column_family_handle_destroy) \
  X(P, column_family_handle_get_id) \
  X(P, create_iterator_cf) \
  X(P, delete_cf) \
  X(P, disable_file_deletions) \
  X(P, enable_file_deletions) \
  X(P, filterpolicy_create_bloom) \
  X(P, flush_cf) \
  X(P, flushoptions_create) \
  X(P, flushoptions_destroy) \
  X(P, flushoptions_set_wait) \
  X(P, free) \
  X(P, get_cf) \
  X(P, get_latest_sequence_number) \
  X(P, get_updates_since) \
  X(P, iter_destroy) \
  X(P, iter_get_error) \
  X(P, iter_key) \
  X(P, iter_next) \
  X(P, iter_seek) \
  X(P, iter_seek_to_first) \
  X(P, iter_valid) \
  X(P, iter_value) \
  X(P, list_column_families) \
  X(P, list_column_families_destroy) \
  X(P, livefiles) \
  X(P, livefiles_column_family_name) \
  X(P, livefiles_count) \
  X(P, livefiles_destroy) \
  X(P, livefiles_level) \
  X(P, livefiles_name) \
  X(P, livefiles_size) \
  X(P, open_column_families) \
  X(P, options_create) \
  X(P, options_destroy) \
  X(P, options_set_block_based_table_factory) \
  X(P, options_set_compression) \
  X(P, options_set_create_if_missing) \
  X(P, options_set_paranoid_checks) \
  X(P, options_set_target_file_size_base) \
  X(P, options_set_write_buffer_size) \
  X(P, property_value_cf) \
  X(P, put_cf) \
  X(P, readoptions_create) \
  X(P, readoptions_destroy) \
  X(P, readoptions_set_verify_checksums) \
  X(P, repair_db) \
  X(P, wal_iter_destroy) \
  X(P, wal_iter_get_batch) \
  X(P, wal_iter_next) \
  X(P, wal_iter_status) \
  X(P, wal_iter_valid) \
  X(P, writebatch_count) \
  X(P, writebatch_data) \
  X(P, writebatch_destroy) \
  X(P, writeoptions_create) \
  X(P, writeoptions_destroy) \
  X(P, writeoptions_set_sync)

typedef DYNLIB_TABLE(RDB_API_FUNCTIONS, rocksdb) rdb_api_fns_t;

extern rdb_api_fns_t rdb_api;

/* Binds librocksdb (dynlib_bind): ST_OK, or ST_E_UNSUPPORTED naming the library and its package.
 * Every entry point of the engine calls it before its first rocksdb_ call. */
int rdb_api_bind(err_t *err);

/* The API's names, each its pointer: call sites read as calls of the C API. */
#define rocksdb_block_based_options_create rdb_api.f.block_based_options_create
#define rocksdb_block_based_options_destroy rdb_api.f.block_based_options_destroy
#define rocksdb_block_based_options_set_filter_policy rdb_api.f.block_based_options_set_filter_policy
#define rocksdb_close rdb_api.f.close
#define rocksdb_column_family_handle_destroy rdb_api.f.column_family_handle_destroy
#define rocksdb_column_family_handle_get_id rdb_api.f.column_family_handle_get_id
#define rocksdb_create_iterator_cf rdb_api.f.create_iterator_cf
#define rocksdb_delete_cf rdb_api.f.delete_cf
#define rocksdb_disable_file_deletions rdb_api.f.disable_file_deletions
#define rocksdb_enable_file_deletions rdb_api.f.enable_file_deletions
#define rocksdb_filterpolicy_create_bloom rdb_api.f.filterpolicy_create_bloom
#define rocksdb_flush_cf rdb_api.f.flush_cf
#define rocksdb_flushoptions_create rdb_api.f.flushoptions_create
#define rocksdb_flushoptions_destroy rdb_api.f.flushoptions_destroy
#define rocksdb_flushoptions_set_wait rdb_api.f.flushoptions_set_wait
#define rocksdb_free rdb_api.f.free
#define rocksdb_get_cf rdb_api.f.get_cf
#define rocksdb_get_latest_sequence_number rdb_api.f.get_latest_sequence_number
#define rocksdb_get_updates_since rdb_api.f.get_updates_since
#define rocksdb_iter_destroy rdb_api.f.iter_destroy
#define rocksdb_iter_get_error rdb_api.f.iter_get_error
#define rocksdb_iter_key rdb_api.f.iter_key
#define rocksdb_iter_next rdb_api.f.iter_next
#define rocksdb_iter_seek rdb_api.f.iter_seek
#define rocksdb_iter_seek_to_first rdb_api.f.iter_seek_to_first
#define rocksdb_iter_valid rdb_api.f.iter_valid
#define rocksdb_iter_value rdb_api.f.iter_value
#define rocksdb_list_column_families rdb_api.f.list_column_families
#define rocksdb_list_column_families_destroy rdb_api.f.list_column_families_destroy
#define rocksdb_livefiles rdb_api.f.livefiles
#define rocksdb_livefiles_column_family_name rdb_api.f.livefiles_column_family_name
#define rocksdb_livefiles_count rdb_api.f.livefiles_count
#define rocksdb_livefiles_destroy rdb_api.f.livefiles_destroy
#define rocksdb_livefiles_level rdb_api.f.livefiles_level
#define rocksdb_livefiles_name rdb_api.f.livefiles_name
#define rocksdb_livefiles_size rdb_api.f.livefiles_size
#define rocksdb_open_column_families rdb_api.f.open_column_families
#define rocksdb_options_create rdb_api.f.options_create
#define rocksdb_options_destroy rdb_api.f.options_destroy
#define rocksdb_options_set_block_based_table_factory rdb_api.f.options_set_block_based_table_factory
#define rocksdb_options_set_compression rdb_api.f.options_set_compression
#define rocksdb_options_set_create_if_missing rdb_api.f.options_set_create_if_missing
#define rocksdb_options_set_paranoid_checks rdb_api.f.options_set_paranoid_checks
#define rocksdb_options_set_target_file_size_base rdb_api.f.options_set_target_file_size_base
#define rocksdb_options_set_write_buffer_size rdb_api.f.options_set_write_buffer_size
#define rocksdb_property_value_cf rdb_api.f.property_value_cf
#define rocksdb_put_cf rdb_api.f.put_cf
#define rocksdb_readoptions_create rdb_api.f.readoptions_create
#define rocksdb_readoptions_destroy rdb_api.f.readoptions_destroy
#define rocksdb_readoptions_set_verify_checksums rdb_api.f.readoptions_set_verify_checksums
#define rocksdb_repair_db rdb_api.f.repair_db
#define rocksdb_wal_iter_destroy rdb_api.f.wal_iter_destroy
#define rocksdb_wal_iter_get_batch rdb_api.f.wal_iter_get_batch
#define rocksdb_wal_iter_next rdb_api.f.wal_iter_next
#define rocksdb_wal_iter_status rdb_api.f.wal_iter_status
#define rocksdb_wal_iter_valid rdb_api.f.wal_iter_valid
#define rocksdb_writebatch_count rdb_api.f.writebatch_count
#define rocksdb_writebatch_data rdb_api.f.writebatch_data
#define rocksdb_writebatch_destroy rdb_api.f.writebatch_destroy
#define rocksdb_writeoptions_create rdb_api.f.writeoptions_create
#define rocksdb_writeoptions_destroy rdb_api.f.writeoptions_destroy
#define rocksdb_writeoptions_set_sync rdb_api.f.writeoptions_set_sync

#endif
