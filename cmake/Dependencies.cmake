# Every dependency is a Debian package; a missing one stops configure and names it.
find_package(Threads REQUIRED)
include(${CMAKE_CURRENT_LIST_DIR}/bfhDependencies.cmake)

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
