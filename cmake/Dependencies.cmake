# Every dependency is a Debian package; a missing one stops configure and names it.
find_package(Threads REQUIRED)
# None of the libraries found here is linked into libbfh: an outside project that links
# bfh::bfh_static needs threads, libm and libdl only (cmake/bfhConfig.cmake.in).
find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: install the Debian package pkg-config")
endif()

# bfh::<name> from pkg-config's <module>, or a stop naming the Debian package to install.
# A macro, so that what pkg_check_modules sets stays in the including scope.
macro(bfh_pkg_target name module debian_package)
  if(NOT TARGET bfh::${name})
    pkg_check_modules(BFH_${name} QUIET IMPORTED_TARGET ${module})
    if(NOT BFH_${name}_FOUND)
      message(FATAL_ERROR "${name} not found: install the Debian package ${debian_package}")
    endif()
    add_library(bfh::${name} ALIAS PkgConfig::BFH_${name})
  endif()
endmacro()

# xxHash: its header only, compiled in (XXH_INLINE_ALL, CMakeLists.txt). Snappy: its header and
# the fuzz targets' link (libbfh binds it at first use, util/snappy_api.h).
bfh_pkg_target(xxhash libxxhash libxxhash-dev)
bfh_pkg_target(snappy snappy libsnappy-dev)

# The decompressors of RocksDB's tables: their headers, for the build only (libbfh binds the
# libraries at first use, util/compress_api.h; what links libbfh.a needs none of them).
bfh_pkg_target(zlib zlib zlib1g-dev)
bfh_pkg_target(lz4 liblz4 liblz4-dev)
bfh_pkg_target(zstd libzstd libzstd-dev)
# The JSON parser of the json:PATH attributes: its header (libbfh binds it at first use,
# util/json_api.h; doc/query.md "Why json-c").
bfh_pkg_target(json_c json-c libjson-c-dev)
# io_uring's library: its header (libbfh binds it at first use, util/uring_api.h).
bfh_pkg_target(uring liburing liburing-dev)
# bzip2 ships no .pc file on Debian.
if(NOT TARGET bfh::bz2)
  find_library(BFH_BZ2_LIBRARY bz2)
  find_path(BFH_BZ2_INCLUDE_DIR bzlib.h)
  if(NOT BFH_BZ2_LIBRARY OR NOT BFH_BZ2_INCLUDE_DIR)
    message(FATAL_ERROR "bzip2 not found: install the Debian package libbz2-dev")
  endif()
  add_library(bfh::bz2 UNKNOWN IMPORTED)
  set_target_properties(bfh::bz2 PROPERTIES IMPORTED_LOCATION ${BFH_BZ2_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${BFH_BZ2_INCLUDE_DIR})
endif()

find_package(leveldb CONFIG QUIET)
if(NOT leveldb_FOUND)
  message(FATAL_ERROR "leveldb not found: install the Debian package libleveldb-dev")
endif()

# LevelDB and RocksDB are needed by the build only (their headers, their SONAMEs, the tests
# and benches that write with them): libbfh loads them at run time (util/dynlib.h).
# RocksDB: Debian's librocksdb-dev has a .pc file only in some releases, so the library and
# the C header are looked for directly.
if(NOT TARGET bfh::rocksdb)
  find_library(BFH_ROCKSDB_LIBRARY rocksdb)
  find_path(BFH_ROCKSDB_INCLUDE_DIR rocksdb/c.h)
  if(NOT BFH_ROCKSDB_LIBRARY OR NOT BFH_ROCKSDB_INCLUDE_DIR)
    message(FATAL_ERROR "rocksdb not found (librocksdb and rocksdb/c.h): install the Debian "
                        "package librocksdb-dev")
  endif()
  add_library(bfh::rocksdb UNKNOWN IMPORTED)
  set_target_properties(bfh::rocksdb PROPERTIES IMPORTED_LOCATION "${BFH_ROCKSDB_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${BFH_ROCKSDB_INCLUDE_DIR}")
endif()
