#include "backend_options.hpp"

#include "option_checks.hpp"

namespace dptrain::app {

void add_device_options(CLI::App* cmd, BackendOptions& o) {
  const char* group = "Device and precision";
  cmd->add_option("--backend", o.backend, "Where to compute: cpu (oneDNN) or cuda (cuDNN, cuBLAS, NCCL)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--device", o.device, "GPU ordinal for --backend cuda (default: the rank's local index on its node)")
      ->check(at_least(0))
      ->group(group);
}

void add_backend_options(CLI::App* cmd, BackendOptions& o, bool with_loss_scale) {
  const char* group = "Device and precision";
  add_device_options(cmd, o);
  cmd->add_option("--precision", o.precision,
                  "fp32, or bf16/fp16: activations and compute copies of the weights in 16 bits on tensor cores, "
                  "fp32 master weights and optimizer state (--backend cuda)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->capture_default_str()
      ->group(group);
  if (with_loss_scale) {
    cmd->add_option("--loss-scale", o.loss_scale,
                    "auto (dynamic for fp16, none otherwise), none, dynamic (start at 65536, halve and skip the step "
                    "on inf/NaN gradients, double after 2000 clean steps), or a fixed number")
        ->capture_default_str()
        ->group(group);
  }
  cmd->add_flag("!--no-memory-plan", o.memory_plan,
                "Give every activation and gradient a buffer of its own instead of sharing memory between "
                "tensors that are not alive at the same time (several times the memory; for comparisons)")
      ->group(group);
  cmd->add_flag("!--skip-memory-check", o.memory_check,
                "Start even when the memory estimate of the model at this batch (what 'dptrain inspect' prints) "
                "exceeds what this rank may use: the GPU's free memory, or the host's available memory, cgroup "
                "limit and Slurm --mem shared by the node's ranks (by default such a run is refused at start, "
                "exit code 105, with the largest batch that fits)")
      ->group(group);
  cmd->add_flag("!--nondeterministic", o.deterministic,
                "--backend cuda: let cuDNN's algorithm search take the fastest convolution algorithms even where "
                "they sum with atomics (other bits at every run); by default only deterministic ones are taken, "
                "so the same step gives the same bits")
      ->group(group);
}

}  // namespace dptrain::app
