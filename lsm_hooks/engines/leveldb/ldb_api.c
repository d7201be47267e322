/* The leveldb C API bound at first use: see ldb_api.h. */
#include "lsm_hooks/engines/leveldb/ldb_api.h"

#ifndef BFH_LEVELDB_SONAME
#error "BFH_LEVELDB_SONAME (the library's SONAME) comes from CMakeLists.txt"
#endif

ldb_api_fns_t ldb_api;

static const char *const names[] = {LDB_API_FUNCTIONS(DYNLIB_NAME, leveldb)};

_Static_assert(sizeof names / sizeof names[0] == sizeof ldb_api.p / sizeof ldb_api.p[0],
               "one name per function pointer");

static dynlib_t lib = DYNLIB_INIT(BFH_LEVELDB_SONAME, "libleveldb1d", names, ldb_api.p);

int ldb_api_bind(err_t *err) { return dynlib_bind(&lib, err); }
