#pragma once
// How gradients are grouped into buckets for the allreduce: in the order the backward pass finishes
// them (reverse build order), a bucket takes parameters until the next would take it past
// `bucket_bytes` of f32. One rule for the GradientReducer and for `dptrain predict`, so a prediction
// reduces exactly the buckets a run reduces.
#include <cstddef>
#include <vector>

namespace dptrain::distributed {

// `elements`: each parameter's element count, in reduction order. The bucket of each parameter
// (0, 1, ...). A parameter larger than a bucket gets one of its own.
std::vector<std::size_t> assign_buckets(const std::vector<std::size_t>& elements, std::size_t bucket_bytes);

}  // namespace dptrain::distributed
