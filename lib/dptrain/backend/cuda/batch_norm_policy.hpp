#pragma once
// Which implementation a CUDA batch-norm plan runs: our kernels (batch_norm_kernels.hpp) or cuDNN's
// legacy batch norm (deprecated in cuDNN 9). Chosen when a plan is made, from the environment.
#include "dptrain/core/dtype.hpp"

namespace dptrain::cuda {

// DPTRAIN_BATCH_NORM: "auto" (or unset: our kernels for bf16 and fp16 activations, cuDNN for fp32),
// "own" (our kernels in every precision) or "cudnn" (cuDNN in every precision; bf16 then follows
// DPTRAIN_BF16_BATCH_NORM, batch_norm_bf16.hpp). Anything else is an error naming the variable.
enum class BatchNormPolicy { automatic, own, cudnn };
BatchNormPolicy batch_norm_policy();

// Whether a plan with activations of `activation` runs our kernels under `policy`.
bool uses_own_batch_norm(BatchNormPolicy policy, DType activation);

}  // namespace dptrain::cuda
