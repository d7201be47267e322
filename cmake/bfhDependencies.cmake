# The libraries bfh links, as the imported targets bfh::xxhash and bfh::snappy (neither
# ships a CMake package on Debian that bfh can rely on: found through their .pc files).
# Included by the build (cmake/Dependencies.cmake) and by the installed bfhConfig.cmake,
# so that an outside project linking bfh::bfh_static finds them the same way.
find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: install the Debian package pkg-config")
endif()

if(NOT TARGET bfh::xxhash)
  pkg_check_modules(BFH_XXHASH QUIET IMPORTED_TARGET libxxhash)
  if(NOT BFH_XXHASH_FOUND)
    message(FATAL_ERROR "xxhash not found: install the Debian package libxxhash-dev")
  endif()
  add_library(bfh::xxhash ALIAS PkgConfig::BFH_XXHASH)
endif()

if(NOT TARGET bfh::snappy)
  pkg_check_modules(BFH_SNAPPY QUIET IMPORTED_TARGET snappy)
  if(NOT BFH_SNAPPY_FOUND)
    message(FATAL_ERROR "snappy not found: install the Debian package libsnappy-dev")
  endif()
  add_library(bfh::snappy ALIAS PkgConfig::BFH_SNAPPY)
endif()
