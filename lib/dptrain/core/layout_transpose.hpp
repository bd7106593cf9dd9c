#pragma once
// Host copies between the plain (NCHW) layout and NHWC, for any element type (the bytes are moved, not
// converted, so a round trip is exact). The CUDA backend's NHWC activations pass through these on their
// way to and from the host; nothing else on the host reads NHWC.
#include <cstddef>
#include <cstdint>

#include "dptrain/core/tensor.hpp"

namespace dptrain {

// For each of `samples` row-major [rows][cols] matrices of `element_bytes`-byte elements in `src`,
// its transpose [cols][rows] in `dst` (which must not overlap `src`).
void transpose_samples(const void* src, void* dst, std::int64_t samples, std::int64_t rows, std::int64_t cols,
                       std::size_t element_bytes);

// A host tensor in `layout` (plain or NHWC) with the same logical contents as host tensor `t` (plain or
// NHWC): `t` itself when it is in that layout already, else a transposed copy.
Tensor with_layout(const Tensor& t, Layout layout);

}  // namespace dptrain
