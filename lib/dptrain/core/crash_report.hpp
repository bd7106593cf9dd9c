#pragma once
// A rank that dies of a fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) says which rank and host it
// was, where it faulted and, for a call through a null pointer (pc 0, where a backtrace stops at
// once), the address it was called from; then it dies of the same signal (the same exit status, and
// a core file where core dumps are enabled). One line per frame, with the library and offset (`addr2line -e LIB OFFSET`
// names the source line), so a crash on rank 93 of a 128-rank job can be found in the job's log.
//
// Installed first thing in main(), before MPI_Init: Open MPI keeps a handler that is already there
// instead of putting its own (which prints only "[0]" for a jump to address 0). UCX, which Open MPI
// loads for InfiniBand, installs its own handlers unless UCX_HANDLE_ERRORS says otherwise: this sets
// UCX_HANDLE_ERRORS=none where the user has not set it.
#include <string>

namespace dptrain {

// Installs the handlers; the rank named is the launcher's (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or
// SLURM_PROCID). A handler that cannot be installed is a warning on stderr, not an error: training
// does not need it.
void install_crash_reporter();

// From now on a crash is also recorded in a file, so that a job script can tell a rank that died of
// a signal from one that stopped on an error it reported (slurm/train.sbatch starts a crashed step
// again): the handler writes one line "rank=R host=H signal=NAME" to PATH.R, or to PATH where the
// launcher gave no rank. An empty PATH records nothing; a path too long to keep is a warning.
void record_crashes_in(const std::string& path);

}  // namespace dptrain
