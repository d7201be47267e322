/* Snappy's C API (snappy-c.h), bound at the first compressed block a reader meets rather than
 * linked: libsnappy brings the C++ runtime, which every bfh process would otherwise load at
 * start although only the readers of LevelDB's and RocksDB's tables decompress (util/dynlib.h).
 * The files that decompress include this header and call snappy_api_bind first. */
#ifndef BFH_UTIL_SNAPPY_API_H
#define BFH_UTIL_SNAPPY_API_H

#include <snappy-c.h>

#include "util/dynlib.h"

#define SNAPPY_API_FUNCTIONS(X, P) X(P, uncompressed_length) X(P, uncompress)

typedef DYNLIB_TABLE(SNAPPY_API_FUNCTIONS, snappy) snappy_api_fns_t;

extern snappy_api_fns_t snappy_api;

/* Binds libsnappy once per process (dynlib_bind): ST_OK, or ST_E_UNSUPPORTED naming the
   library and its Debian package. */
int snappy_api_bind(err_t *err);

#define snappy_uncompressed_length snappy_api.f.uncompressed_length
#define snappy_uncompress snappy_api.f.uncompress

#endif
