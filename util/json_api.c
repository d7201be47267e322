/* json-c bound at first use: see json_api.h. */
#include "util/json_api.h"

#ifndef BFH_JSONC_SONAME
#error "BFH_JSONC_SONAME (the library's SONAME) comes from CMakeLists.txt"
#endif

jsonc_api_fns_t jsonc_api;

DYNLIB_DEFINE(jsonc_api, JSONC_API_FUNCTIONS, json, BFH_JSONC_SONAME, "libjson-c5")
