/* Snappy bound at first use: see snappy_api.h. */
#include "util/snappy_api.h"

#ifndef BFH_SNAPPY_SONAME
#error "BFH_SNAPPY_SONAME (the library's SONAME) comes from CMakeLists.txt"
#endif

snappy_api_fns_t snappy_api;

DYNLIB_DEFINE(snappy_api, SNAPPY_API_FUNCTIONS, snappy, BFH_SNAPPY_SONAME, "libsnappy1v5")
