# Every dependency is a Debian package; a missing one stops configure and names it.
find_package(Threads REQUIRED)
include(${CMAKE_CURRENT_LIST_DIR}/bfhDependencies.cmake)

find_package(leveldb CONFIG QUIET)
if(NOT leveldb_FOUND)
  message(FATAL_ERROR "leveldb not found: install the Debian package libleveldb-dev")
endif()
