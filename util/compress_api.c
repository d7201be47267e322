/* The decompressors of RocksDB's blocks bound at first use: see compress_api.h. */
#include "util/compress_api.h"

#if !defined(BFH_ZLIB_SONAME) || !defined(BFH_LZ4_SONAME) || !defined(BFH_ZSTD_SONAME) || \
    !defined(BFH_BZ2_SONAME)
#error "BFH_ZLIB_SONAME ... (the libraries' SONAMEs) come from CMakeLists.txt"
#endif

zlib_api_fns_t zlib_api;
lz4_api_fns_t lz4_api;
zstd_api_fns_t zstd_api;
bz2_api_fns_t bz2_api;

DYNLIB_BARE_DEFINE(zlib_api, ZLIB_API_FUNCTIONS, BFH_ZLIB_SONAME, "zlib1g")
DYNLIB_DEFINE(lz4_api, LZ4_API_FUNCTIONS, LZ4, BFH_LZ4_SONAME, "liblz4-1")
DYNLIB_DEFINE(zstd_api, ZSTD_API_FUNCTIONS, ZSTD, BFH_ZSTD_SONAME, "libzstd1")
DYNLIB_DEFINE(bz2_api, BZ2_API_FUNCTIONS, BZ2, BFH_BZ2_SONAME, "libbz2-1.0")
