#pragma once
#include <cstdint>

#include "dptrain/core/tensor.hpp"

namespace dptrain {

// How many samples have their label among the k most probable classes. Host tensors: probabilities
// [N, classes] f32, labels [N] int32. Ties count against the label (a uniform guess is not correct), and so does a
// score that is not finite (a diverged net is never right).
std::int64_t top_k_correct(const Tensor& probabilities, const Tensor& labels, int k);

}  // namespace dptrain
