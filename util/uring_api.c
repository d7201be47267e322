/* liburing bound at first use: see uring_api.h. */
#include "util/uring_api.h"

#ifndef BFH_URING_SONAME
#error "BFH_URING_SONAME (the library's SONAME) comes from CMakeLists.txt"
#endif

uring_api_fns_t uring_api;

DYNLIB_DEFINE(uring_api, URING_API_FUNCTIONS, io_uring, BFH_URING_SONAME, "liburing2")
