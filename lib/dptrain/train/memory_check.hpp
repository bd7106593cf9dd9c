#pragma once
// Refusing at start a run that cannot fit: the memory estimate of the model at this rank's batch
// (net/memory_estimate.hpp, the figure `dptrain inspect` prints) against what this rank may use (on a
// GPU the device's free memory; on the CPU the host's limits, core/memory_limit.hpp, shared by the
// ranks of this node). A run that would otherwise allocate until the kernel or the user kills it ends
// before any work with the figures and the largest batch that fits.
#include <cstddef>
#include <string>

#include "dptrain/backend/backend.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/compute_options.hpp"

namespace dptrain {

struct MemoryCheck {
  std::size_t needed = 0;     // the estimate, planned (or one buffer per tensor with --no-memory-plan)
  std::size_t available = 0;  // what this rank may use
  std::string source;         // where `available` comes from
  bool known = false;         // false: no limit could be read; nothing is refused
};

// The figures for `model` of `config` (its batch, purpose and memory options) on `backend`, with
// `ranks_here` ranks sharing this host's memory and `ranks` in the job.
MemoryCheck measure_memory_fit(const std::string& model, const ModelConfig& config, const BackendOptions& device,
                               Backend& backend, int ranks_here, int ranks);

// Throws OptionError (exit code 105) when the estimate exceeds what is available, naming both figures,
// their sources and the largest batch that fits; unless `device.memory_check` is off.
void check_memory_fits(const std::string& model, const ModelConfig& config, const BackendOptions& device,
                       Backend& backend, int ranks_here, int ranks);

}  // namespace dptrain
