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

