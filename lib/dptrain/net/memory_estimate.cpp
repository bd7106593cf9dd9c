#include "dptrain/net/memory_estimate.hpp"

#include <algorithm>
#include <string_view>

#include "dptrain/backend/cudnn_workspace.hpp"

namespace dptrain {
namespace {
bool is_weight(const Layer& layer, const Parameter& p) {
  const std::string_view kind = layer.kind();
  return (kind == "convolution" || kind == "linear") && p.name.ends_with("/weight");
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
  std::size_t weights = 0;  // of the convolutions and linear layers, fp32
  for (const Net::Node& node : net.nodes()) {
    if (!node.layer) continue;
    if (training || !node.training_only) e.layer_state += node.layer->saved_state_bytes();
    for (const Parameter& p : node.layer->parameters()) {
      const std::size_t bytes = p.value.bytes();
      e.parameters += bytes;
      if (is_weight(*node.layer, p)) weights += bytes;
    }
  }
  if (training) {
    e.gradients = e.parameters;
    e.optimizer = e.parameters;  // one momentum buffer per parameter
    if (o.ranks > 1) e.buckets = e.gradients;
  }
  if (o.cuda) {
    e.reserved = kCudaReservedBytes;
    e.workspace = cudnn_workspace_cap_bytes();
    // bf16/fp16: the plans keep a low-precision copy of each weight (and of its gradient in training).
    if (o.precision != Precision::fp32) e.workspace += weights / 4 * size_of(activation) * (training ? 2 : 1);
  } else {
    // oneDNN's kernels read the weights in their own blocked layouts: a copy for the forward pass, and
    // in training one for backward-data and one for the weight gradient.
    e.workspace = weights * (training ? 3 : 1);
  }
  return e;
}

std::int64_t largest_batch(const std::function<std::unique_ptr<Net>(std::int64_t)>& build,
                           const MemoryEstimateOptions& options, std::size_t limit, bool planned) {
  auto need = [&](std::int64_t batch) {
    const MemoryEstimate e = estimate_memory(*build(batch), options);
    return planned ? e.total() : e.total_unplanned();
  };
  const std::size_t one = need(1);
  if (one > limit) return 0;
  // Activations grow linearly with the batch: extrapolate from two sizes, then correct on the real plan.
  const std::size_t per_image = std::max<std::size_t>(need(2) - one, 1);
  std::int64_t batch = 1 + static_cast<std::int64_t>((limit - one) / per_image);
  for (int round = 0; round < 8; ++round) {
    const std::size_t at = need(batch);
    if (at > limit) {
      batch = std::max<std::int64_t>(1, batch - std::max<std::int64_t>(1, static_cast<std::int64_t>((at - limit + per_image - 1) / per_image)));
    } else if (need(batch + 1) <= limit) {
      batch += std::max<std::int64_t>(1, static_cast<std::int64_t>((limit - at) / per_image));
    } else {
      return batch;
    }
  }
  while (batch > 1 && need(batch) > limit) --batch;
  return batch;
}

}  // namespace dptrain
