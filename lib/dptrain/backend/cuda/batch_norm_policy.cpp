#include "dptrain/backend/cuda/batch_norm_policy.hpp"

#include <cstdlib>
#include <string>

#include "dptrain/core/error.hpp"

namespace dptrain::cuda {

BatchNormPolicy batch_norm_policy() {
  const char* value = std::getenv("DPTRAIN_BATCH_NORM");
  const std::string text = value != nullptr ? value : "";
  if (text.empty() || text == "auto") return BatchNormPolicy::automatic;
  if (text == "own") return BatchNormPolicy::own;
  if (text == "cudnn") return BatchNormPolicy::cudnn;
  throw Error("DPTRAIN_BATCH_NORM is \"" + text +
              "\"; give auto (dptrain's kernels for bf16 and fp16, cuDNN for fp32: the default), own (dptrain's "
              "kernels in every precision) or cudnn (cuDNN in every precision)");
}

bool uses_own_batch_norm(BatchNormPolicy policy, DType activation) {
  switch (policy) {
    case BatchNormPolicy::own: return true;
    case BatchNormPolicy::cudnn: return false;
    case BatchNormPolicy::automatic: return activation != DType::f32;
  }
  return false;
}

}  // namespace dptrain::cuda
