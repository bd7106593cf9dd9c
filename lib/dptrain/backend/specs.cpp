#include "dptrain/backend/specs.hpp"

#include "dptrain/core/error.hpp"

namespace dptrain {
namespace {
void check_window(const Shape& input, const Window2d& w, const std::string& who) {
  DPTRAIN_CHECK(input.rank() == 4, who, ": input must be 4-D [N,C,H,W] but has shape ", input.to_string());
  DPTRAIN_CHECK(w.kernel_h > 0 && w.kernel_w > 0 && w.stride_h > 0 && w.stride_w > 0 && w.pad_h >= 0 && w.pad_w >= 0,
                who, ": kernel and stride must be positive and padding non-negative");
  DPTRAIN_CHECK(input[2] + 2 * w.pad_h >= w.kernel_h && input[3] + 2 * w.pad_w >= w.kernel_w, who, ": a ", w.kernel_h,
                "x", w.kernel_w, " window does not fit an input of shape ", input.to_string(), " with padding ",
                w.pad_h, "x", w.pad_w);
}
}  // namespace

std::int64_t window_output_size(std::int64_t input, int kernel, int stride, int pad, Rounding rounding,
                                std::int64_t* extra_pad_after) {
  const std::int64_t span = input + 2 * pad - kernel;
  std::int64_t out = (rounding == Rounding::ceil ? (span + stride - 1) / stride : span / stride) + 1;
  // Caffe's rule, applied with or without padding: the last window must start inside the image (or
  // the leading pad), never wholly in the padding that ceil rounding adds after it.
  if (rounding == Rounding::ceil && (out - 1) * stride >= input + pad) --out;
  if (extra_pad_after) {
    const std::int64_t needed = (out - 1) * stride + kernel - (input + 2 * pad);
    *extra_pad_after = needed > 0 ? needed : 0;
  }
  return out;
}

Shape convolution_output_shape(const ConvolutionSpec& spec, const std::string& who) {
  check_window(spec.input, spec.window, who);
  DPTRAIN_CHECK(spec.out_channels > 0, who, ": out_channels must be positive");
  const auto& w = spec.window;
  return Shape{spec.input[0], spec.out_channels,
               window_output_size(spec.input[2], w.kernel_h, w.stride_h, w.pad_h, Rounding::floor),
               window_output_size(spec.input[3], w.kernel_w, w.stride_w, w.pad_w, Rounding::floor)};
}

Shape convolution_weight_shape(const ConvolutionSpec& spec) {
  return Shape{spec.out_channels, spec.input[1], spec.window.kernel_h, spec.window.kernel_w};
}

Shape pooling_output_shape(const PoolingSpec& spec, const std::string& who) {
  check_window(spec.input, spec.window, who);
  const auto& w = spec.window;
  DPTRAIN_CHECK(w.pad_h < w.kernel_h && w.pad_w < w.kernel_w, who, ": pooling padding must be smaller than the window");
  return Shape{spec.input[0], spec.input[1],
               window_output_size(spec.input[2], w.kernel_h, w.stride_h, w.pad_h, spec.rounding),
               window_output_size(spec.input[3], w.kernel_w, w.stride_w, w.pad_w, spec.rounding)};
}

Shape linear_weight_shape(const LinearSpec& spec) { return Shape{spec.out_features, spec.input.per_sample()}; }

Shape linear_output_shape(const LinearSpec& spec, const std::string& who) {
  DPTRAIN_CHECK(spec.input.rank() >= 2, who, ": input must be [N, features...] but has shape ", spec.input.to_string());
  DPTRAIN_CHECK(spec.out_features > 0, who, ": out_features must be positive");
  return Shape{spec.input[0], spec.out_features};
}

Shape concat_output_shape(std::span<const Shape> inputs, const std::string& who) {
  DPTRAIN_CHECK(!inputs.empty(), who, ": needs at least one input");
  const Shape& first = inputs[0];
  DPTRAIN_CHECK(first.rank() >= 2, who, ": inputs must be [N,C,...] but input 0 has shape ", first.to_string());
  std::vector<std::int64_t> out = first.dims();
  out[1] = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Shape& s = inputs[i];
    bool agrees = s.rank() == first.rank() && s[0] == first[0];
    for (int axis = 2; agrees && axis < s.rank(); ++axis) agrees = s[axis] == first[axis];
    DPTRAIN_CHECK(agrees, who, ": input ", i, " has shape ", s.to_string(), " but input 0 has shape ",
                  first.to_string(), "; all inputs must agree except in channels");
    out[1] += s[1];
  }
  return Shape(std::move(out));
}

}  // namespace dptrain
