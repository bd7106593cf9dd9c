#include "dptrain/core/layout_transpose.hpp"

#include <algorithm>
#include <cstring>

namespace dptrain {

void transpose_samples(const void* src, void* dst, std::int64_t samples, std::int64_t rows, std::int64_t cols,
                       std::size_t element_bytes) {
  DPTRAIN_CHECK(samples >= 0 && rows >= 0 && cols >= 0 && element_bytes > 0, "transpose_samples: ", samples, " x ",
                rows, " x ", cols, " elements of ", element_bytes, " bytes");
  const auto* in = static_cast<const std::byte*>(src);
  auto* out = static_cast<std::byte*>(dst);
  const auto plane = static_cast<std::size_t>(rows * cols) * element_bytes;
  // Tiles keep both the rows read and the rows written in cache.
  constexpr std::int64_t kTile = 32;
  for (std::int64_t n = 0; n < samples; ++n) {
    const std::byte* a = in + static_cast<std::size_t>(n) * plane;
    std::byte* b = out + static_cast<std::size_t>(n) * plane;
    for (std::int64_t r0 = 0; r0 < rows; r0 += kTile) {
      for (std::int64_t c0 = 0; c0 < cols; c0 += kTile) {
        for (std::int64_t r = r0; r < std::min(rows, r0 + kTile); ++r) {
          for (std::int64_t c = c0; c < std::min(cols, c0 + kTile); ++c) {
            std::memcpy(b + static_cast<std::size_t>(c * rows + r) * element_bytes,
                        a + static_cast<std::size_t>(r * cols + c) * element_bytes, element_bytes);
          }
        }
      }
    }
  }
}

Tensor with_layout(const Tensor& t, Layout layout) {
  DPTRAIN_CHECK(t.device().is_cpu(), "with_layout: a host tensor is needed, not one in ", t.device().to_string(),
                " memory");
  DPTRAIN_CHECK((layout == Layout::plain || layout == Layout::nhwc) &&
                    (t.layout() == Layout::plain || t.layout() == Layout::nhwc),
                "with_layout: converts between the plain and NHWC layouts only, not from ", layout_name(t.layout()),
                " to ", layout_name(layout));
  if (t.layout() == layout) return t;
  const Shape& s = t.shape();
  DPTRAIN_CHECK(s.rank() == 4, "with_layout: a tensor of shape ", s.to_string(), " has no NHWC layout");
  Tensor out = Tensor::empty(s, t.dtype(), layout);
  const std::int64_t channels = s[1], plane = s[2] * s[3];
  if (layout == Layout::nhwc) {
    transpose_samples(t.raw(), out.raw(), s[0], channels, plane, size_of(t.dtype()));
  } else {
    transpose_samples(t.raw(), out.raw(), s[0], plane, channels, size_of(t.dtype()));
  }
  return out;
}

}  // namespace dptrain
