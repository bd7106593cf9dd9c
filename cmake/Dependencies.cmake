# The required libraries. Each missing one stops the configure step with the names of the Debian and
# Spack packages that provide it, so a newcomer knows what to install (or runs scripts/install-deps.sh).
include(FindPkgConfig)

function(dptrain_require found what debian spack)
  if(NOT ${found})
    message(FATAL_ERROR "dptrain needs ${what}, which was not found.\n"
      "  Debian/Ubuntu: apt-get install ${debian}   (or run scripts/install-deps.sh)\n"
      "  Spack:         spack install ${spack}   (or use the environment in spack.yaml)")
  endif()
endfunction()

# oneDNN: found by header and library rather than dnnl-config.cmake, because Debian's package config
# insists on OpenCL (its GPU runtime) although we only use the CPU engine.
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp HINTS ENV DNNL_ROOT ENV ONEDNN_ROOT PATH_SUFFIXES include)
find_library(DNNL_LIBRARY NAMES dnnl HINTS ENV DNNL_ROOT ENV ONEDNN_ROOT PATH_SUFFIXES lib lib64)
if(DNNL_INCLUDE_DIR AND DNNL_LIBRARY)
  set(DNNL_FOUND TRUE)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION ${DNNL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${DNNL_INCLUDE_DIR})
endif()
dptrain_require(DNNL_FOUND "oneDNN (CPU backend)" libdnnl-dev onednn)

find_package(MPI QUIET COMPONENTS C)
dptrain_require(MPI_C_FOUND "MPI (Open MPI)" "libopenmpi-dev openmpi-bin" openmpi)

find_package(HDF5 QUIET COMPONENTS C)
dptrain_require(HDF5_FOUND "HDF5 (C library)" "libhdf5-dev hdf5-tools" hdf5)
add_library(dptrain_hdf5 INTERFACE)
target_include_directories(dptrain_hdf5 SYSTEM INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
target_link_libraries(dptrain_hdf5 INTERFACE ${HDF5_C_LIBRARIES})
target_compile_definitions(dptrain_hdf5 INTERFACE ${HDF5_C_DEFINITIONS} ${HDF5_DEFINITIONS})

find_package(CLI11 CONFIG QUIET)
dptrain_require(CLI11_FOUND "CLI11 (command line)" libcli11-dev cli11)

pkg_check_modules(TURBOJPEG QUIET IMPORTED_TARGET libturbojpeg)
dptrain_require(TURBOJPEG_FOUND "libjpeg-turbo (TurboJPEG API)" libturbojpeg0-dev libjpeg-turbo)
# The libjpeg API of the same libjpeg-turbo, for the loader's cropped decode (jpeg_crop_scanline and
# jpeg_skip_scanlines, which TurboJPEG 2.1 does not offer).
pkg_check_modules(LIBJPEG QUIET IMPORTED_TARGET libjpeg)
dptrain_require(LIBJPEG_FOUND "libjpeg-turbo (libjpeg API)" libjpeg62-turbo-dev libjpeg-turbo)

find_package(nlohmann_json 3 CONFIG QUIET)
dptrain_require(nlohmann_json_FOUND "nlohmann-json (manifests and metrics)" nlohmann-json3-dev nlohmann-json)

find_package(ZLIB QUIET)
dptrain_require(ZLIB_FOUND "zlib (Fashion-MNIST's gzip files, checksums)" zlib1g-dev zlib)

if(DPTRAIN_BUILD_TESTS)
  find_package(Catch2 2 CONFIG QUIET)
  dptrain_require(Catch2_FOUND "Catch2 v2 (tests)" catch2 "catch2@2")
endif()

find_package(Threads REQUIRED)
find_package(OpenMP QUIET COMPONENTS CXX)
