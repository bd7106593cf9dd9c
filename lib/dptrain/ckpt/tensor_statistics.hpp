#pragma once
// Summary statistics of a tensor's values, for `dptrain inspect CKPT` (a diverged run shows as NaN or
// a huge norm; a layer that never trained as its initial spread).
#include <cstdint>

#include "dptrain/core/tensor.hpp"

namespace dptrain::ckpt {

struct TensorStatistics {
  std::int64_t count = 0;
  double mean = 0, std = 0, min = 0, max = 0, l2_norm = 0;  // std: population (divides by count)
};

// Of a host f32 tensor, accumulated in double; an empty tensor gives zeros.
TensorStatistics tensor_statistics(const Tensor& t);

}  // namespace dptrain::ckpt
