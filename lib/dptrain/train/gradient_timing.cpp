#include "dptrain/train/gradient_timing.hpp"

#include <algorithm>

#include "dptrain/distributed/bucket_plan.hpp"

namespace dptrain {

std::vector<distributed::BucketTiming> gradient_timing(const Net& net, std::size_t bucket_bytes) {
  const auto& nodes = net.nodes();
  double total = 0;
  for (const Net::Node& node : nodes) {
    if (node.layer) total += node.layer->flops_per_sample();
  }
  // Parameters in reduction order (reverse build order), each with the backward pass's progress when
  // its layer's backward is done.
  std::vector<std::size_t> elements;
  std::vector<double> ready;
  double done = 0;
  std::size_t layers_done = 0, layers = 0;
  for (const Net::Node& node : nodes) layers += node.layer ? 1 : 0;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (!it->layer) continue;
    done += it->layer->flops_per_sample();
    ++layers_done;
    // Without FLOPs (a model of layers that report none), the share of layers done.
    const double fraction =
        total > 0 ? done / total
                  : static_cast<double>(layers_done) / static_cast<double>(std::max<std::size_t>(layers, 1));
    const auto params = it->layer->parameters();
    // A layer's own parameters are listed in build order; the reducer reverses the whole list.
    for (auto p = params.rbegin(); p != params.rend(); ++p) {
      elements.push_back(static_cast<std::size_t>(p->value.numel()));
      ready.push_back(fraction);
    }
  }
  const std::vector<std::size_t> bucket_of = distributed::assign_buckets(elements, bucket_bytes);
  std::vector<distributed::BucketTiming> buckets;
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (buckets.size() <= bucket_of[i]) buckets.push_back({0, 0});
    buckets.back().bytes += static_cast<double>(elements[i] * sizeof(float));
    buckets.back().ready_fraction = std::max(buckets.back().ready_fraction, ready[i]);
  }
  return buckets;
}

}  // namespace dptrain
