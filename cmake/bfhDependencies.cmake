# The libraries bfh links, as the imported targets bfh::xxhash, bfh::snappy ... (none
# ships a CMake package on Debian that bfh can rely on: found through their .pc files).
# Included by the build (cmake/Dependencies.cmake) and by the installed bfhConfig.cmake,
# so that an outside project linking bfh::bfh_static finds them the same way.
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

bfh_pkg_target(xxhash libxxhash libxxhash-dev)
bfh_pkg_target(snappy snappy libsnappy-dev)

# The compressors of RocksDB's tables (lsm_hooks/rocksdb_format/rdb_table.c).
bfh_pkg_target(zlib zlib zlib1g-dev)
bfh_pkg_target(lz4 liblz4 liblz4-dev)
bfh_pkg_target(zstd libzstd libzstd-dev)
# The JSON parser of the json:PATH attributes (query/attr.c; doc/query.md "Why json-c").
bfh_pkg_target(json_c json-c libjson-c-dev)
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
