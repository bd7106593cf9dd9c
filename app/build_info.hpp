#pragma once
// How this binary was built: by hand with CMake or by Spack (with which spec), and the options that
// decide what it can do (the CUDA backend and its architectures). Printed by `dptrain info`.
#include <string>

namespace dptrain::app {

// Two lines, each ending in '\n'. Built by CMake:
//   built by: cmake (DPTRAIN_CUDA=AUTO -> CUDA backend OFF)
//   build:    Release, GNU 12.2.0
// Built by Spack:
//   built by: spack (dptrain@0.1.0+cuda~tests build_system=cmake ... cuda_arch=60 /abcdefg)
//   build:    DPTRAIN_CUDA=ON -> CUDA backend ON, Release, GNU 12.2.0, CUDA architectures 60
std::string describe_build();

}  // namespace dptrain::app
