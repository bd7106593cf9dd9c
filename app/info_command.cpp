// dptrain info: what this binary was built with and which libraries it runs on, so a user can tell
// from a job log exactly which oneDNN, MPI, HDF5 (and CUDA stack) produced a result.
#include <hdf5.h>
#include <mpi.h>

#include <iostream>
#include <oneapi/dnnl/dnnl.hpp>

#include "build_info.hpp"
#include "commands.hpp"
#include "dptrain/core/check_hdf5.hpp"
#include "dptrain/core/check_mpi.hpp"
#include "dptrain/core/exit_codes.hpp"
#include "dptrain/distributed/job.hpp"
#include "option_checks.hpp"

#if DPTRAIN_HAVE_CUDA
#include "dptrain/backend/cuda/device_query.hpp"
#endif

namespace dptrain::app {
namespace {
// One "CODE<TAB>MEANING" line a code: for scripts, and for the test that holds the guide to it.
int print_exit_codes() {
  for (const exit_code::Meaning& m : exit_code::table()) std::cout << m.code << "\t" << m.meaning << "\n";
  return 0;
}

int run_info(const distributed::JobOptions& options) {
  // Under srun or mpiexec every rank takes part, so the map shows where each one landed.
  distributed::Job job(options);
  if (!job.is_root()) return 0;
  std::cout << "dptrain " << DPTRAIN_VERSION << " (built by " << DPTRAIN_BUILT_BY << ")\n";
  std::cout << describe_build();
  const dnnl_version_t* dnnl = dnnl_version();
  std::cout << "oneDNN   " << dnnl->major << "." << dnnl->minor << "." << dnnl->patch << " (CPU runtime "
            << (dnnl->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other") << ")\n";
  unsigned h5_major = 0, h5_minor = 0, h5_release = 0;
  DPTRAIN_H5_CHECK(H5get_libversion(&h5_major, &h5_minor, &h5_release));
  std::cout << "HDF5     " << h5_major << "." << h5_minor << "." << h5_release << "\n";
  char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  DPTRAIN_MPI_CHECK(MPI_Get_library_version(mpi_version, &length));
  std::string mpi(mpi_version, static_cast<std::size_t>(length));
  if (auto cut = mpi.find_first_of(",\n"); cut != std::string::npos) mpi.resize(cut);
  std::cout << "MPI      " << mpi << "\n";
#if DPTRAIN_HAVE_CUDA
  std::cout << cuda::describe_cuda_stack();
#else
  std::cout << "CUDA     not built (CPU backend only; no cuDNN, NCCL)\n";
#endif
  std::cout << "\n" << describe(job.topology()) << distributed::describe(job.launch_warnings());
  return 0;
}
}  // namespace

Command add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "info",
      "Print the versions of dptrain and the libraries it runs on, the GPUs it "
      "sees and, under srun or mpiexec, the map of ranks to nodes, GPUs and CPUs, with a warning and "
      "its fix for each launch that runs but not as meant (docs/cluster.md)");
  auto options = std::make_shared<distributed::JobOptions>();
  cmd->add_option("--ranks-per-node", options->ranks_per_node, "Treat each block of K consecutive ranks as one node")
      ->check(at_least(0));
  auto exit_codes = std::make_shared<bool>(false);
  cmd->add_flag("--exit-codes", *exit_codes,
                "Print the exit codes of dptrain and what each means (one 'CODE<Tab>MEANING' line a code) and "
                "nothing else");
  return [options, exit_codes] { return *exit_codes ? print_exit_codes() : run_info(*options); };
}

}  // namespace dptrain::app
