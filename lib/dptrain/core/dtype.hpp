#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dptrain {

// Element types. f32 is the compute and master-weight type; bf16/f16 are room for mixed precision on
// GPUs; i32 holds labels and u8 raw images.
enum class DType : std::uint8_t { f32, bf16, f16, i32, u8 };

constexpr std::size_t size_of(DType type) {
  switch (type) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::i32: return 4;
    case DType::u8: return 1;
  }
  return 0;
}

constexpr std::string_view name_of(DType type) {
  switch (type) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::i32: return "i32";
    case DType::u8: return "u8";
  }
  return "?";
}

// The DType that corresponds to a C++ element type, for typed access to tensors.
template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<std::int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<std::uint8_t> {
  static constexpr DType value = DType::u8;
};

}  // namespace dptrain
