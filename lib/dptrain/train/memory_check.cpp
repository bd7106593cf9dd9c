#include "dptrain/train/memory_check.hpp"

#include <algorithm>
#include <optional>

#include "dptrain/core/byte_size.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/core/exit_codes.hpp"
#include "dptrain/core/memory_limit.hpp"
#include "dptrain/net/memory_estimate.hpp"

namespace dptrain {
namespace {
struct Estimating {
  MemoryEstimateOptions options;
  std::unique_ptr<Backend> shapes;  // nets for an estimate are built on the CPU backend: same shapes and plan
  ModelConfig config;
};

Estimating estimating(const ModelConfig& config, const BackendOptions& device, int ranks) {
  Estimating e;
  e.options.purpose = config.memory.purpose;
  e.options.precision = parse_precision(device.precision);
  e.options.cuda = device.backend == "cuda";
  e.options.ranks = std::max(1, ranks);
  e.shapes = make_cpu_backend();
  e.config = config;
  e.config.memory.allocate = false;
  return e;
}

std::size_t needed_bytes(const MemoryEstimate& estimate, bool planned) {
  // On a GPU the context is made already: the device's free memory no longer holds it.
  const std::size_t total = planned ? estimate.total() : estimate.total_unplanned();
  return total > estimate.reserved ? total - estimate.reserved : 0;
}
}  // namespace

MemoryCheck measure_memory_fit(const std::string& model, const ModelConfig& config, const BackendOptions& device,
                               Backend& backend, int ranks_here, int ranks) {
  MemoryCheck check;
  if (const std::optional<std::size_t> free = backend.device_memory_free()) {
    check.available = *free;
    check.source = "the GPU's free memory";
  } else if (const std::optional<MemoryLimit> host = host_memory_limit()) {
    check.available = host->bytes / static_cast<std::size_t>(std::max(1, ranks_here));
    check.source = host->source + (ranks_here > 1 ? " shared by " + std::to_string(ranks_here) + " ranks" : "");
  } else {
    return check;
  }
  check.known = true;
  Estimating e = estimating(config, device, ranks);
  e.options.device_bytes = e.options.cuda ? check.available + kCudaReservedBytes : 0;
  const MemoryEstimate estimate = estimate_memory(*build_model(model, *e.shapes, e.config), e.options);
  check.needed = needed_bytes(estimate, config.memory.plan);
  return check;
}

void check_memory_fits(const std::string& model, const ModelConfig& config, const BackendOptions& device,
                       Backend& backend, int ranks_here, int ranks) {
  if (!device.memory_check) return;
  const MemoryCheck check = measure_memory_fit(model, config, device, backend, ranks_here, ranks);
  if (!check.known || check.needed <= check.available) return;
  Estimating e = estimating(config, device, ranks);
  e.options.device_bytes = e.options.cuda ? check.available + kCudaReservedBytes : 0;
  // The largest batch whose estimate fits, the context's share counted back in as the estimate counts it.
  const std::size_t limit = check.available + (e.options.cuda ? kCudaReservedBytes : 0);
  const std::int64_t largest = largest_batch(
      [&](std::int64_t batch) {
        ModelConfig c = e.config;
        c.batch = static_cast<int>(batch);
        return build_model(model, *e.shapes, c);
      },
      e.options, limit, config.memory.plan);
  throw OptionError(
      exit_code::option_value,
      detail::concat(model, " at a batch of ", config.batch, " per rank needs about ",
                     format_bytes(static_cast<double>(check.needed)), config.memory.plan ? "" : " (--no-memory-plan)",
                     ", more than the ", format_bytes(static_cast<double>(check.available)), " this rank may use (",
                     check.source, "). ",
                     largest > 0 ? "The largest batch that fits is " + std::to_string(largest) + " (--batch-size)"
                                 : std::string("Not even one image fits"),
                     "; --skip-memory-check starts anyway"));
}

}  // namespace dptrain
