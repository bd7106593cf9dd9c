#pragma once
// The flags every multi-rank command shares (train, bench, eval).
#include <CLI/CLI.hpp>

#include "dptrain/distributed/job.hpp"

namespace dptrain::app {

void add_distributed_options(CLI::App* cmd, distributed::JobOptions& options);

// --loader-threads N (also spelled --threads, its old name); 0, the default: what the rank can spare.
void add_loader_threads_option(CLI::App* cmd, int& threads);
// The loader threads of this rank: `requested` when given, else the CPUs of its share of its CPU set
// not taken by compute threads (OpenMP's on the CPU backend, one host thread on a GPU), at least 1.
int loader_threads(int requested, const distributed::Job& job, bool on_gpu);

}  // namespace dptrain::app
