#pragma once
// The arithmetic a backend trains in (--precision). fp32 is exact training; bf16 and fp16 keep
// activations and the compute copies of the weights in 16 bits (tensor cores, half the memory
// traffic) while the master weights, their gradients and the optimizer state stay fp32. fp16 has a
// narrow exponent, so its gradients need dynamic loss scaling (train/loss_scaler.hpp); bf16 does not.
#include <string>
#include <string_view>

#include "dptrain/core/dtype.hpp"

namespace dptrain {

enum class Precision { fp32, bf16, fp16 };

Precision parse_precision(std::string_view text);  // fp32 | bf16 | fp16, else a one-sentence error
std::string_view name_of(Precision precision);
// The element type of activations and activation gradients in this precision.
DType activation_dtype(Precision precision);
// Whether this precision needs loss scaling by default (fp16).
bool needs_loss_scaling(Precision precision);

}  // namespace dptrain
