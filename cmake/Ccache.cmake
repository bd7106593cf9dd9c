# Compile through ccache when it is there: CI builds the same sources in several presets (cuda, cpu)
# and again inside Spack, and ccache turns every repeat into a copy. A launcher the user set
# (CMAKE_<LANG>_COMPILER_LAUNCHER) wins. Spack's recipe turns this off: Spack runs ccache itself
# (config:ccache), and a second ccache in front of its compiler wrapper would only add misses.
if(NOT DPTRAIN_CCACHE)
  return()
endif()
find_program(DPTRAIN_CCACHE_PROGRAM ccache)
if(NOT DPTRAIN_CCACHE_PROGRAM)
  return()
endif()
foreach(lang IN ITEMS C CXX CUDA)
  if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
    set(CMAKE_${lang}_COMPILER_LAUNCHER "${DPTRAIN_CCACHE_PROGRAM}")
  endif()
endforeach()
message(STATUS "Compiling through ${DPTRAIN_CCACHE_PROGRAM}")
