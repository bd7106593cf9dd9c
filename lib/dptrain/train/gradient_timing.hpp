#pragma once
// When a training step's gradient buckets are ready, for the scaling model (`dptrain predict`): the
// buckets the GradientReducer forms (distributed::assign_buckets, reverse build order), each with
// the fraction of the backward pass done when its last gradient is written. The backward pass runs
// the layers in reverse and each costs about twice its forward FLOPs, so a bucket of the classifier
// is ready almost at once and the one holding the first convolution only at the very end.
#include <cstddef>
#include <vector>

#include "dptrain/distributed/scaling_model.hpp"
#include "dptrain/net/net.hpp"

namespace dptrain {

std::vector<distributed::BucketTiming> gradient_timing(const Net& net, std::size_t bucket_bytes);

}  // namespace dptrain
