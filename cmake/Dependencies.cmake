# Every dependency is a Debian package; a missing one stops configure and names it.
find_package(Threads REQUIRED)
find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: install the Debian package pkg-config")
endif()

pkg_check_modules(XXHASH QUIET IMPORTED_TARGET libxxhash)
if(NOT XXHASH_FOUND)
  message(FATAL_ERROR "xxhash not found: install the Debian package libxxhash-dev")
endif()
add_library(bfh::xxhash ALIAS PkgConfig::XXHASH)

pkg_check_modules(SNAPPY QUIET IMPORTED_TARGET snappy)
if(NOT SNAPPY_FOUND)
  message(FATAL_ERROR "snappy not found: install the Debian package libsnappy-dev")
endif()
add_library(bfh::snappy ALIAS PkgConfig::SNAPPY)

find_package(leveldb CONFIG QUIET)
if(NOT leveldb_FOUND)
  message(FATAL_ERROR "leveldb not found: install the Debian package libleveldb-dev")
endif()
