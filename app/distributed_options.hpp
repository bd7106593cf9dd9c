#pragma once
// The flags every multi-rank command shares (train, bench, eval).
#include <CLI/CLI.hpp>

#include "dptrain/dist/job.hpp"

namespace dptrain::app {

void add_distributed_options(CLI::App* cmd, dist::JobOptions& options);

}  // namespace dptrain::app
