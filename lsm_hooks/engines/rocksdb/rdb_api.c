/* The rocksdb C API bound at first use: see rdb_api.h. */
#include "lsm_hooks/engines/rocksdb/rdb_api.h"

#ifndef BFH_ROCKSDB_SONAME
#error "BFH_ROCKSDB_SONAME (the library's SONAME) comes from CMakeLists.txt"
#endif

rdb_api_fns_t rdb_api;

DYNLIB_DEFINE(rdb_api, RDB_API_FUNCTIONS, rocksdb, BFH_ROCKSDB_SONAME, "librocksdb7.8")
