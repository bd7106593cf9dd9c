#include "dptrain/net/memory_estimate.hpp"

#include <algorithm>
#include <string_view>

#include "dptrain/backend/cudnn_workspace.hpp"

namespace dptrain {
namespace {
bool is_weight_of(const Layer& layer, const Parameter& p, std::string_view kind) {
  return kind == layer.kind() && p.name.ends_with("/weight");
}
}  // namespace

MemoryEstimate estimate_memory(const Net& net, const MemoryEstimateOptions& o) {
  MemoryEstimate e;
  const bool training = o.purpose == NetPurpose::training;
  const DType activation = activation_dtype(o.precision);
  const MemoryPlan plan = plan_memory(net.plan_nodes_for(o.purpose, activation), o.purpose);
  e.batch = net.image_shape()[0];
  e.activations = plan.arena_bytes();
  e.unplanned_activations = plan.unplanned_bytes();
  e.inputs = static_cast<std::size_t>(net.image_shape().numel()) * size_of(activation) +
             static_cast<std::size_t>(e.batch) * sizeof(std::int32_t);
  std::size_t conv_weights = 0, linear_weights = 0;  // fp32 bytes
  std::size_t widened = 0;                           // the largest f32 copy set a 16-bit LRN makes on the GPU
  for (const Net::Node& node : net.nodes()) {
    if (!node.layer) continue;
    if (training || !node.training_only) e.layer_state += node.layer->saved_state_bytes();
    const std::string_view kind = node.layer->kind();
    if (kind == "lrn") {
      // Input, output gradient and input gradient widened to f32 for cuDNN in one backward call (16-bit
      // batch norm runs on our own kernels, on the activations themselves).
      widened = std::max(widened, static_cast<std::size_t>(node.shape.numel()) * sizeof(float) * (training ? 3 : 2));
    }
    for (const Parameter& p : node.layer->parameters()) {
      const std::size_t bytes = p.value.bytes();
      e.parameters += bytes;
      if (is_weight_of(*node.layer, p, "convolution")) conv_weights += bytes;
      if (is_weight_of(*node.layer, p, "linear")) linear_weights += bytes;
    }
  }
  if (training) {
    e.gradients = e.parameters;
    e.optimizer = e.parameters;  // one momentum buffer per parameter
  }
  if (o.cuda) {
    e.reserved = kCudaReservedBytes;
    e.inputs += static_cast<std::size_t>(net.image_shape().numel()) * sizeof(float);  // the stager's f32 batch
    if (o.precision != Precision::fp32) {
      // bf16/fp16: a low-precision copy of each convolution weight and, in training, of its gradient;
      // one of each linear weight; and the f32 copies LRN widens its tensors into.
      e.workspace += conv_weights / sizeof(float) * size_of(activation) * (training ? 2 : 1);
      e.workspace += linear_weights / sizeof(float) * size_of(activation);
      e.workspace += widened;
    }
    // The first step's searches may use the cap, which follows what everything else leaves free on
    // the device; a plan counts at least the cap without a device (512 MiB), so that the largest
    // batch still leaves the searches a useful workspace.
    const auto cap_leaving = [&](std::size_t rest) {
      const std::size_t floor = cudnn_workspace_cap_bytes();
      if (o.workspace_cap > 0) return o.workspace_cap;
      return o.device_bytes > rest ? std::max(floor, cudnn_workspace_cap_bytes(o.device_bytes - rest)) : floor;
    };
    e.unplanned_workspace = e.workspace;  // the weight copies, so far
    const std::size_t planned_rest = e.total(), unplanned_rest = e.total_unplanned();
    e.workspace += cap_leaving(planned_rest);
    e.unplanned_workspace += cap_leaving(unplanned_rest);
  } else {
    // oneDNN's convolutions read their weights in their own blocked layouts: a copy for the forward
    // pass and, in training, one for backward-data and one for the weight gradient.
    e.workspace = conv_weights * (training ? 3 : 1);
    e.unplanned_workspace = e.workspace;
  }
  return e;
}

std::int64_t largest_batch(const std::function<std::unique_ptr<Net>(std::int64_t)>& build,
                           const MemoryEstimateOptions& options, std::size_t limit, bool planned) {
  auto fits = [&](std::int64_t batch) {
    const MemoryEstimate e = estimate_memory(*build(batch), options);
    return (planned ? e.total() : e.total_unplanned()) <= limit;
  };
  if (!fits(1)) return 0;
  // Activations grow linearly with the batch: guess from two sizes, then bisect on the real plan.
  const MemoryEstimate one = estimate_memory(*build(1), options), two = estimate_memory(*build(2), options);
  const std::size_t at1 = planned ? one.total() : one.total_unplanned(),
                    at2 = planned ? two.total() : two.total_unplanned();
  const std::size_t per_image = at2 > at1 ? at2 - at1 : 1;
  const std::int64_t guess =
      std::clamp<std::int64_t>(1 + static_cast<std::int64_t>((limit - at1) / per_image), 1, kMaxBatch);
  std::int64_t lo = 1, hi = kMaxBatch + 1;  // fits(lo); !fits(hi), or hi is beyond the largest batch asked about
  if (fits(guess)) {
    lo = guess;
    const std::int64_t above = std::min<std::int64_t>(guess + guess / 64 + 1, kMaxBatch);
    if (above > lo && !fits(above))
      hi = above;
    else if (above > lo)
      lo = above;
  } else {
    hi = guess;
    const std::int64_t below = std::max<std::int64_t>(1, guess - guess / 64 - 1);
    if (fits(below))
      lo = below;
    else
      hi = below;
  }
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (fits(mid))
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace dptrain
