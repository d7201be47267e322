/* The rocksdb C API bound at first use: see rdb_api.h. */
#include "lsm_hooks/engines/rocksdb/rdb_api.h"

#ifndef BFH_ROCKSDB_SONAME
#error "BFH_ROCKSDB_SONAME (the library's SONAME) comes from CMakeLists.txt"
#endif

rdb_api_fns_t rdb_api;

static const char *const names[] = {RDB_API_FUNCTIONS(DYNLIB_NAME, rocksdb)};

_Static_assert(sizeof names / sizeof names[0] == sizeof rdb_api.p / sizeof rdb_api.p[0],
               "one name per function pointer");

static dynlib_t lib = DYNLIB_INIT(BFH_ROCKSDB_SONAME, "librocksdb7.8", names, rdb_api.p);

int rdb_api_bind(err_t *err) { return dynlib_bind(&lib, err); }
