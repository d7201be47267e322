/* The decompressors of RocksDB's blocks (zlib, LZ4, Zstandard, bzip2), each bound at the first
 * block of its kind a reader meets rather than linked: four libraries that every bfh process
 * would otherwise map and relocate at start although only the reader of RocksDB's tables
 * (lsm_hooks/rocksdb_format/rdb_table.c) calls them (util/dynlib.h). That reader includes this
 * header and calls the library's _bind before its first call; the names it calls (inflate,
 * LZ4_decompress_safe ...) are the tables' pointers. */
#ifndef BFH_UTIL_COMPRESS_API_H
#define BFH_UTIL_COMPRESS_API_H

#include <bzlib.h>
#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include "util/dynlib.h"

/* zlib's functions share no prefix: listed whole (DYNLIB_BARE_TABLE). inflateInit2_ is what
   zlib.h's inflateInit2 macro calls. */
#define ZLIB_API_FUNCTIONS(X, P) X(P, inflateInit2_) X(P, inflate) X(P, inflateEnd)
#define LZ4_API_FUNCTIONS(X, P) X(P, decompress_safe)
#define ZSTD_API_FUNCTIONS(X, P) X(P, decompress) X(P, isError)
#define BZ2_API_FUNCTIONS(X, P) X(P, bzDecompressInit) X(P, bzDecompress) X(P, bzDecompressEnd)

typedef DYNLIB_BARE_TABLE(ZLIB_API_FUNCTIONS) zlib_api_fns_t;
typedef DYNLIB_TABLE(LZ4_API_FUNCTIONS, LZ4) lz4_api_fns_t;
typedef DYNLIB_TABLE(ZSTD_API_FUNCTIONS, ZSTD) zstd_api_fns_t;
typedef DYNLIB_TABLE(BZ2_API_FUNCTIONS, BZ2) bz2_api_fns_t;

extern zlib_api_fns_t zlib_api;
extern lz4_api_fns_t lz4_api;
extern zstd_api_fns_t zstd_api;
extern bz2_api_fns_t bz2_api;

/* Each binds its library once per process (dynlib_bind): ST_OK, or ST_E_UNSUPPORTED naming the
   library and its Debian package. */
int zlib_api_bind(err_t *err);
int lz4_api_bind(err_t *err);
int zstd_api_bind(err_t *err);
int bz2_api_bind(err_t *err);

#define inflateInit2_ zlib_api.f.inflateInit2_
#define inflate zlib_api.f.inflate
#define inflateEnd zlib_api.f.inflateEnd
#define LZ4_decompress_safe lz4_api.f.decompress_safe
#define ZSTD_decompress zstd_api.f.decompress
#define ZSTD_isError zstd_api.f.isError
#define BZ2_bzDecompressInit bz2_api.f.bzDecompressInit
#define BZ2_bzDecompress bz2_api.f.bzDecompress
#define BZ2_bzDecompressEnd bz2_api.f.bzDecompressEnd

#endif
