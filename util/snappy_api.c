/* Snappy bound at first use: see snappy_api.h. */
#include "util/snappy_api.h"

#ifndef BFH_SNAPPY_SONAME
#error "BFH_SNAPPY_SONAME (the library's SONAME) comes from CMakeLists.txt"
#endif

snappy_api_fns_t snappy_api;

static const char *const names[] = {SNAPPY_API_FUNCTIONS(DYNLIB_NAME, snappy)};

_Static_assert(sizeof names / sizeof names[0] == sizeof snappy_api.p / sizeof snappy_api.p[0],
               "one name per function pointer");

static dynlib_t lib = DYNLIB_INIT(BFH_SNAPPY_SONAME, "libsnappy1v5", names, snappy_api.p);

int snappy_api_bind(err_t *err) { return dynlib_bind(&lib, err); }
