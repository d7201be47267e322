/* The leveldb C API bound at first use: see ldb_api.h. */
#include "lsm_hooks/engines/leveldb/ldb_api.h"

#ifndef BFH_LEVELDB_SONAME
#error "BFH_LEVELDB_SONAME (the library's SONAME) comes from CMakeLists.txt"
#endif

ldb_api_fns_t ldb_api;

DYNLIB_DEFINE(ldb_api, LDB_API_FUNCTIONS, leveldb, BFH_LEVELDB_SONAME, "libleveldb1d")
