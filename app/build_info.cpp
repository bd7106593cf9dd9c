// The build description comes from a header CMake generates (build_config.hpp), not from -D
// definitions on the whole target, so a new Spack spec or option recompiles this file alone.
#include "build_info.hpp"

#include <sstream>
#include <string_view>

#include "build_config.hpp"

namespace dptrain::app {

std::string describe_build() {
  namespace config = build_config;
  std::ostringstream backend;
  backend << "DPTRAIN_CUDA=" << config::cuda_option << " -> CUDA backend " << (config::have_cuda ? "ON" : "OFF");
  // A Spack build names its spec; a CMake build has none, so its CUDA option says what it is.
  const bool from_spack = !std::string_view(config::spack_spec).empty();
  std::ostringstream out;
  out << "built by: " << config::built_by << " (" << (from_spack ? config::spack_spec : backend.str()) << ")\n";
  out << "build:    ";
  if (from_spack) out << backend.str() << ", ";
  out << config::build_type << ", " << config::compiler;
  if (config::have_cuda) out << ", CUDA architectures " << config::cuda_architectures;
  out << "\n";
  // What the CUDA backend was compiled and linked against (the run-time versions follow below).
  if (config::have_cuda)
    out << "toolkit:  " << config::cuda_toolkit << "\n          " << config::cuda_libraries << "\n";
  return out.str();
}

}  // namespace dptrain::app
