#pragma once
// The flags every multi-rank command shares (train, bench, eval).
#include <CLI/CLI.hpp>

#include "dptrain/distributed/job.hpp"

namespace dptrain::app {

void add_distributed_options(CLI::App* cmd, distributed::JobOptions& options);
// Only the job's shape and failure handling: --ranks-per-node, --stall-timeout, --failure-report
// (dptrain preflight, which sums no gradients).
void add_job_control_options(CLI::App* cmd, distributed::JobOptions& options);

// --loader-threads N (also spelled --threads, its old name); 0, the default: what the rank can spare.
void add_loader_threads_option(CLI::App* cmd, int& threads);

}  // namespace dptrain::app
