#include "dptrain/core/precision.hpp"

#include "dptrain/core/error.hpp"

namespace dptrain {

Precision parse_precision(std::string_view text) {
  if (text == "fp32") return Precision::fp32;
  if (text == "bf16") return Precision::bf16;
  if (text == "fp16") return Precision::fp16;
  throw Error("--precision must be fp32, bf16 or fp16, not '" + std::string(text) + "'");
}

std::string_view name_of(Precision precision) {
  switch (precision) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

DType activation_dtype(Precision precision) {
  switch (precision) {
    case Precision::fp32: return DType::f32;
    case Precision::bf16: return DType::bf16;
    case Precision::fp16: return DType::f16;
  }
  return DType::f32;
}

bool needs_loss_scaling(Precision precision) { return precision == Precision::fp16; }

}  // namespace dptrain
