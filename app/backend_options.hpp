#pragma once
// The flags that choose where and in what arithmetic a command computes (train, bench, eval):
// --backend cpu|cuda, --device, --precision fp32|bf16|fp16, --loss-scale, --no-memory-plan.
#include <CLI/CLI.hpp>

#include "dptrain/train/compute_options.hpp"

namespace dptrain::app {

void add_backend_options(CLI::App* cmd, BackendOptions& options, bool with_loss_scale);
// Only where: --backend and --device (dptrain preflight, which computes no model).
void add_device_options(CLI::App* cmd, BackendOptions& options);

}  // namespace dptrain::app
