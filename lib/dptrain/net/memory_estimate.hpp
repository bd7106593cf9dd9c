#pragma once
// How much memory one rank needs to train (or evaluate) a model: parameters, gradients, optimizer
// state, the planned activations, what layers keep between forward and backward, the input batch and
// the backend's workspace; and the largest batch that fits a memory limit. `dptrain inspect` prints
// it and `dptrain bench` sets it beside the peak it measured.
//
// The activations come from the memory plan itself (memory_plan.hpp) computed for the precision asked,
// so a GPU's figure can be had on a machine without one: the plan depends only on shapes and element
// sizes, and the CUDA backend keeps the same bytes per tensor as the CPU's.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "dptrain/core/precision.hpp"
#include "dptrain/net/net.hpp"

namespace dptrain {

struct MemoryEstimateOptions {
  NetPurpose purpose = NetPurpose::training;
  Precision precision = Precision::fp32;
  bool cuda = false;  // the CUDA backend's workspace, low-precision weight copies and context
  int ranks = 1;      // the job's ranks: the reducer's buckets hold the gradients themselves, no extra copy
  // CUDA: the device's memory, where known (`inspect --memory-limit`): the cuDNN workspace cap then
  // follows what the rest leaves free, as on the device (backend/cudnn_workspace.hpp), but counts no
  // less than the cap without a device; 0: the cap without a device.
  std::size_t device_bytes = 0;
  // CUDA: the cap a running backend chose (bench); 0: from device_bytes.
  std::size_t workspace_cap = 0;
};

// Bytes, per rank.
struct MemoryEstimate {
  std::int64_t batch = 0;
  std::size_t parameters = 0;             // fp32 master weights
  std::size_t gradients = 0;              // their fp32 gradients
  std::size_t optimizer = 0;              // SGD momentum
  std::size_t activations = 0;            // the planned arena of activations and activation gradients
  std::size_t unplanned_activations = 0;  // the same with one buffer per tensor (before the planner)
  std::size_t layer_state =
      0;  // kept by layers from forward to backward (pooling indices, LRN, dropout masks, probabilities)
  std::size_t inputs = 0;  // the images and labels of a batch
  std::size_t workspace =
      0;  // CPU: oneDNN's blocked copies of the weights; CUDA: cuDNN workspace and low-precision weight copies
  std::size_t reserved = 0;  // CUDA: the context, cuBLAS and cuDNN (set aside before anything else)
  // The workspace with one buffer per tensor: the cuDNN cap follows what those leave free of a device.
  std::size_t unplanned_workspace = 0;

  std::size_t fixed() const { return parameters + gradients + optimizer + workspace + reserved; }
  std::size_t total() const { return fixed() + activations + layer_state + inputs; }
  std::size_t total_unplanned() const {
    return fixed() - workspace + unplanned_workspace + unplanned_activations + layer_state + inputs;
  }
};

// The CUDA context with cuBLAS and cuDNN loaded takes this much device memory before any tensor (an
// estimate: 0.5-1 GiB on P100 to H100 class GPUs with CUDA 12-13).
constexpr std::size_t kCudaReservedBytes = std::size_t{768} << 20;

// The estimate for `net` (built for any purpose, allocated or not) at its own batch size.
MemoryEstimate estimate_memory(const Net& net, const MemoryEstimateOptions& options);

// The largest batch asked about (the CLI's --batch-size bound).
constexpr std::int64_t kMaxBatch = std::int64_t{1} << 20;

// The largest batch (1 to kMaxBatch) whose estimate fits `limit` bytes, or 0 when not even one image
// does; kMaxBatch means "at least that".
// `build(batch)` builds the net without allocating its activations (MemoryOptions::allocate off).
// With `planned` off the old scheme's figure is used.
std::int64_t largest_batch(const std::function<std::unique_ptr<Net>(std::int64_t)>& build,
                           const MemoryEstimateOptions& options, std::size_t limit, bool planned = true);

}  // namespace dptrain
