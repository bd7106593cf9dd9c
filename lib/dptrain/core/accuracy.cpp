#include "dptrain/core/accuracy.hpp"

#include <cmath>

namespace dptrain {

std::int64_t top_k_correct(const Tensor& probabilities, const Tensor& labels, int k) {
  DPTRAIN_CHECK(probabilities.shape().rank() == 2 && labels.shape() == Shape{probabilities.shape()[0]},
                "top_k_correct: probabilities ", probabilities.shape().to_string(), " and labels ",
                labels.shape().to_string(), " do not match");
  const std::int64_t rows = probabilities.shape()[0], classes = probabilities.shape()[1];
  std::int64_t correct = 0;
  for (std::int64_t n = 0; n < rows; ++n) {
    const float* p = probabilities.data<float>() + n * classes;
    const std::int32_t label = labels.data<std::int32_t>()[n];
    // A score that is not a number is never correct: a NaN or infinite probability of the label
    // counts against it, and so does any class whose score is NaN (it is not below the label's).
    if (!std::isfinite(p[label])) continue;
    // The label is in the top k when fewer than k classes score at least as high as it does.
    std::int64_t at_least = 0;
    for (std::int64_t c = 0; c < classes; ++c) {
      if (c != label && !(p[c] < p[label])) ++at_least;
    }
    if (at_least < k) ++correct;
  }
  return correct;
}

}  // namespace dptrain
