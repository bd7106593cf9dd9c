#include "support/reference_spatial.hpp"

#include <cstdint>
#include <limits>

#include "dptrain/core/error.hpp"

namespace dptrain::testing::reference {
namespace {
using i64 = std::int64_t;

std::size_t size_of(const Shape& s) { return static_cast<std::size_t>(s.numel()); }

void check_size(const std::vector<double>& v, const Shape& shape, const char* what) {
  DPTRAIN_CHECK(v.size() == size_of(shape), "reference: ", what, " has ", v.size(), " values but shape ",
                shape.to_string(), " needs ", shape.numel());
}

// Row-major offset of (n, c, h, w) in a tensor of shape [*, C, H, W].
std::size_t at(const Shape& s, i64 n, i64 c, i64 h, i64 w) {
  return static_cast<std::size_t>(((n * s[1] + c) * s[2] + h) * s[3] + w);
}

Shape convolution_weight(const ConvolutionSpec& spec) {
  return Shape{spec.out_channels, spec.input[1], spec.window.kernel_h, spec.window.kernel_w};
}

// One spatial axis of a pooling window: the input positions [first, first + kernel) it covers, of
// which only those in [0, size) are in the image.
struct Axis {
  i64 size;
  int kernel, stride, pad;
  i64 first(i64 o) const { return o * stride - pad; }
  bool inside(i64 i) const { return i >= 0 && i < size; }
};

// Calls fn(ih, iw) for every in-image position of output window (oh, ow), row-major.
template <typename Fn>
void for_each_in_window(const Axis& ah, const Axis& aw, i64 oh, i64 ow, Fn&& fn) {
  for (i64 ih = ah.first(oh); ih < ah.first(oh) + ah.kernel; ++ih) {
    if (!ah.inside(ih)) continue;
    for (i64 iw = aw.first(ow); iw < aw.first(ow) + aw.kernel; ++iw) {
      if (aw.inside(iw)) fn(ih, iw);
    }
  }
}

// Where the maximum of window (n, c, oh, ow) is; ties go to the first position (strictly greater
// replaces).
std::size_t argmax(const PoolingSpec& spec, const std::vector<double>& x, const Axis& ah, const Axis& aw, i64 n, i64 c,
                   i64 oh, i64 ow) {
  std::size_t best = std::numeric_limits<std::size_t>::max();
  double best_value = -std::numeric_limits<double>::infinity();
  for_each_in_window(ah, aw, oh, ow, [&](i64 ih, i64 iw) {
    const std::size_t k = at(spec.input, n, c, ih, iw);
    if (best == std::numeric_limits<std::size_t>::max() || x[k] > best_value) {
      best = k;
      best_value = x[k];
    }
  });
  // A window entirely in padding has no defined maximum; fail rather than invent one.
  DPTRAIN_CHECK(best != std::numeric_limits<std::size_t>::max(), "reference pooling: window (", oh, ",", ow,
                ") of input ", spec.input.to_string(), " lies entirely in padding");
  return best;
}

// What an average window's sum is divided by.
double divisor(const PoolingSpec& spec, const Axis& ah, const Axis& aw, i64 oh, i64 ow) {
  if (spec.kind == PoolingKind::average_include_padding) {
    return static_cast<double>(spec.window.kernel_h) * spec.window.kernel_w;
  }
  i64 count = 0;
  for_each_in_window(ah, aw, oh, ow, [&](i64, i64) { ++count; });
  DPTRAIN_CHECK(count > 0, "reference pooling: window (", oh, ",", ow, ") of input ", spec.input.to_string(),
                " lies entirely in padding");
  return static_cast<double>(count);
}
}  // namespace

// ---- Convolution ---------------------------------------------------------------------------------

Shape convolution_output(const ConvolutionSpec& spec) {
  const auto& w = spec.window;
  return Shape{spec.input[0], spec.out_channels,
               window_output_size(spec.input[2], w.kernel_h, w.stride_h, w.pad_h, Rounding::floor),
               window_output_size(spec.input[3], w.kernel_w, w.stride_w, w.pad_w, Rounding::floor)};
}

std::vector<double> convolution_forward(const ConvolutionSpec& spec, const std::vector<double>& x,
                                        const std::vector<double>& weight, const std::vector<double>& bias) {
  const Shape& xs = spec.input;
  const Shape ws = convolution_weight(spec), ys = convolution_output(spec);
  const auto& win = spec.window;
  check_size(x, xs, "convolution input");
  check_size(weight, ws, "convolution weight");
  if (spec.bias) check_size(bias, Shape{spec.out_channels}, "convolution bias");
  std::vector<double> y(size_of(ys));
  for (i64 n = 0; n < ys[0]; ++n)
    for (i64 oc = 0; oc < ys[1]; ++oc)
      for (i64 oh = 0; oh < ys[2]; ++oh)
        for (i64 ow = 0; ow < ys[3]; ++ow) {
          double sum = spec.bias ? bias[static_cast<std::size_t>(oc)] : 0.0;
          for (i64 ic = 0; ic < xs[1]; ++ic)
            for (i64 kh = 0; kh < win.kernel_h; ++kh)
              for (i64 kw = 0; kw < win.kernel_w; ++kw) {
                const i64 ih = oh * win.stride_h - win.pad_h + kh, iw = ow * win.stride_w - win.pad_w + kw;
                if (ih < 0 || ih >= xs[2] || iw < 0 || iw >= xs[3]) continue;  // zero padding
                sum += x[at(xs, n, ic, ih, iw)] * weight[at(ws, oc, ic, kh, kw)];
              }
          y[at(ys, n, oc, oh, ow)] = sum;
        }
  return y;
}

std::vector<double> convolution_backward_data(const ConvolutionSpec& spec, const std::vector<double>& dy,
                                              const std::vector<double>& weight) {
  const Shape& xs = spec.input;
  const Shape ws = convolution_weight(spec), ys = convolution_output(spec);
  const auto& win = spec.window;
  check_size(dy, ys, "convolution output gradient");
  check_size(weight, ws, "convolution weight");
  // Scatter every output's gradient back along the same index map the forward gathers with, so the
  // reference is the forward's transpose by construction.
  std::vector<double> dx(size_of(xs), 0.0);
  for (i64 n = 0; n < ys[0]; ++n)
    for (i64 oc = 0; oc < ys[1]; ++oc)
      for (i64 oh = 0; oh < ys[2]; ++oh)
        for (i64 ow = 0; ow < ys[3]; ++ow) {
          const double g = dy[at(ys, n, oc, oh, ow)];
          for (i64 ic = 0; ic < xs[1]; ++ic)
            for (i64 kh = 0; kh < win.kernel_h; ++kh)
              for (i64 kw = 0; kw < win.kernel_w; ++kw) {
                const i64 ih = oh * win.stride_h - win.pad_h + kh, iw = ow * win.stride_w - win.pad_w + kw;
                if (ih < 0 || ih >= xs[2] || iw < 0 || iw >= xs[3]) continue;
                dx[at(xs, n, ic, ih, iw)] += g * weight[at(ws, oc, ic, kh, kw)];
              }
        }
  return dx;
}

ConvolutionWeightGrads convolution_backward_weights(const ConvolutionSpec& spec, const std::vector<double>& x,
                                                    const std::vector<double>& dy) {
  const Shape& xs = spec.input;
  const Shape ws = convolution_weight(spec), ys = convolution_output(spec);
  const auto& win = spec.window;
  check_size(x, xs, "convolution input");
  check_size(dy, ys, "convolution output gradient");
  ConvolutionWeightGrads grads;
  grads.weight.assign(size_of(ws), 0.0);
  if (spec.bias) grads.bias.assign(static_cast<std::size_t>(spec.out_channels), 0.0);
  for (i64 n = 0; n < ys[0]; ++n)
    for (i64 oc = 0; oc < ys[1]; ++oc)
      for (i64 oh = 0; oh < ys[2]; ++oh)
        for (i64 ow = 0; ow < ys[3]; ++ow) {
          const double g = dy[at(ys, n, oc, oh, ow)];
          if (spec.bias) grads.bias[static_cast<std::size_t>(oc)] += g;
          for (i64 ic = 0; ic < xs[1]; ++ic)
            for (i64 kh = 0; kh < win.kernel_h; ++kh)
              for (i64 kw = 0; kw < win.kernel_w; ++kw) {
                const i64 ih = oh * win.stride_h - win.pad_h + kh, iw = ow * win.stride_w - win.pad_w + kw;
                if (ih < 0 || ih >= xs[2] || iw < 0 || iw >= xs[3]) continue;
                grads.weight[at(ws, oc, ic, kh, kw)] += g * x[at(xs, n, ic, ih, iw)];
              }
        }
  return grads;
}

// ---- Pooling -------------------------------------------------------------------------------------

Shape pooling_output(const PoolingSpec& spec) {
  const auto& w = spec.window;
  return Shape{spec.input[0], spec.input[1],
               window_output_size(spec.input[2], w.kernel_h, w.stride_h, w.pad_h, spec.rounding),
               window_output_size(spec.input[3], w.kernel_w, w.stride_w, w.pad_w, spec.rounding)};
}

std::vector<double> pooling_forward(const PoolingSpec& spec, const std::vector<double>& x) {
  const Shape& xs = spec.input;
  const Shape ys = pooling_output(spec);
  const auto& w = spec.window;
  check_size(x, xs, "pooling input");
  // Windows past the image (symmetric padding or ceil's extra padding after it) are clipped by
  // Axis::inside, so the extra padding needs no separate handling here.
  const Axis ah{xs[2], w.kernel_h, w.stride_h, w.pad_h}, aw{xs[3], w.kernel_w, w.stride_w, w.pad_w};
  std::vector<double> y(size_of(ys));
  for (i64 n = 0; n < ys[0]; ++n)
    for (i64 c = 0; c < ys[1]; ++c)
      for (i64 oh = 0; oh < ys[2]; ++oh)
        for (i64 ow = 0; ow < ys[3]; ++ow) {
          double value = 0;
          if (spec.kind == PoolingKind::max) {
            value = x[argmax(spec, x, ah, aw, n, c, oh, ow)];
          } else {
            double sum = 0;
            for_each_in_window(ah, aw, oh, ow, [&](i64 ih, i64 iw) { sum += x[at(xs, n, c, ih, iw)]; });
            value = sum / divisor(spec, ah, aw, oh, ow);
          }
          y[at(ys, n, c, oh, ow)] = value;
        }
  return y;
}

std::vector<double> pooling_backward(const PoolingSpec& spec, const std::vector<double>& x,
                                     const std::vector<double>& dy) {
  const Shape& xs = spec.input;
  const Shape ys = pooling_output(spec);
  const auto& w = spec.window;
  check_size(dy, ys, "pooling output gradient");
  if (spec.kind == PoolingKind::max) check_size(x, xs, "pooling input");
  const Axis ah{xs[2], w.kernel_h, w.stride_h, w.pad_h}, aw{xs[3], w.kernel_w, w.stride_w, w.pad_w};
  std::vector<double> dx(size_of(xs), 0.0);
  for (i64 n = 0; n < ys[0]; ++n)
    for (i64 c = 0; c < ys[1]; ++c)
      for (i64 oh = 0; oh < ys[2]; ++oh)
        for (i64 ow = 0; ow < ys[3]; ++ow) {
          const double g = dy[at(ys, n, c, oh, ow)];
          if (spec.kind == PoolingKind::max) {
            dx[argmax(spec, x, ah, aw, n, c, oh, ow)] += g;
          } else {
            const double share = g / divisor(spec, ah, aw, oh, ow);
            for_each_in_window(ah, aw, oh, ow, [&](i64 ih, i64 iw) { dx[at(xs, n, c, ih, iw)] += share; });
          }
        }
  return dx;
}

// ---- Linear --------------------------------------------------------------------------------------

std::vector<double> linear_forward(const LinearSpec& spec, const std::vector<double>& x,
                                   const std::vector<double>& weight, const std::vector<double>& bias) {
  const i64 batch = spec.input[0], in = spec.input.per_sample(), out = spec.out_features;
  check_size(x, spec.input, "linear input");
  check_size(weight, Shape{out, in}, "linear weight");
  if (spec.bias) check_size(bias, Shape{out}, "linear bias");
  std::vector<double> y(static_cast<std::size_t>(batch * out));
  for (i64 n = 0; n < batch; ++n)
    for (i64 o = 0; o < out; ++o) {
      double sum = spec.bias ? bias[static_cast<std::size_t>(o)] : 0.0;
      for (i64 i = 0; i < in; ++i) {
        sum += x[static_cast<std::size_t>(n * in + i)] * weight[static_cast<std::size_t>(o * in + i)];
      }
      y[static_cast<std::size_t>(n * out + o)] = sum;
    }
  return y;
}

std::vector<double> linear_backward_data(const LinearSpec& spec, const std::vector<double>& dy,
                                         const std::vector<double>& weight) {
  const i64 batch = spec.input[0], in = spec.input.per_sample(), out = spec.out_features;
  check_size(dy, Shape{batch, out}, "linear output gradient");
  check_size(weight, Shape{out, in}, "linear weight");
  std::vector<double> dx(static_cast<std::size_t>(batch * in), 0.0);  // dx = dy W
  for (i64 n = 0; n < batch; ++n)
    for (i64 o = 0; o < out; ++o)
      for (i64 i = 0; i < in; ++i) {
        dx[static_cast<std::size_t>(n * in + i)] +=
            dy[static_cast<std::size_t>(n * out + o)] * weight[static_cast<std::size_t>(o * in + i)];
      }
  return dx;
}

LinearWeightGrads linear_backward_weights(const LinearSpec& spec, const std::vector<double>& x,
                                          const std::vector<double>& dy) {
  const i64 batch = spec.input[0], in = spec.input.per_sample(), out = spec.out_features;
  check_size(x, spec.input, "linear input");
  check_size(dy, Shape{batch, out}, "linear output gradient");
  LinearWeightGrads grads;  // dW = dy^T x, db = column sums of dy
  grads.weight.assign(static_cast<std::size_t>(out * in), 0.0);
  if (spec.bias) grads.bias.assign(static_cast<std::size_t>(out), 0.0);
  for (i64 n = 0; n < batch; ++n)
    for (i64 o = 0; o < out; ++o) {
      const double g = dy[static_cast<std::size_t>(n * out + o)];
      if (spec.bias) grads.bias[static_cast<std::size_t>(o)] += g;
      for (i64 i = 0; i < in; ++i) {
        grads.weight[static_cast<std::size_t>(o * in + i)] += g * x[static_cast<std::size_t>(n * in + i)];
      }
    }
  return grads;
}

// ---- Concat --------------------------------------------------------------------------------------

namespace {
// Elements per channel (the product of the axes after 1) and the output's channel count.
void check_concat_shapes(std::span<const Shape> shapes, i64& per_channel, i64& channels) {
  DPTRAIN_CHECK(!shapes.empty(), "reference concat: no inputs");
  const Shape& first = shapes[0];
  per_channel = first.per_sample() / first[1];
  channels = 0;
  for (const Shape& s : shapes) {
    bool agrees = s.rank() == first.rank() && s[0] == first[0];
    for (int axis = 2; agrees && axis < s.rank(); ++axis) agrees = s[axis] == first[axis];
    DPTRAIN_CHECK(agrees, "reference concat: shapes ", s.to_string(), " and ", first.to_string(), " disagree");
    channels += s[1];
  }
}
}  // namespace

std::vector<double> concat_forward(std::span<const Shape> shapes, const std::vector<std::vector<double>>& inputs) {
  DPTRAIN_CHECK(shapes.size() == inputs.size(), "reference concat: ", shapes.size(), " shapes but ", inputs.size(),
                " inputs");
  i64 per_channel = 0, channels = 0;
  check_concat_shapes(shapes, per_channel, channels);
  const i64 batch = shapes[0][0];
  std::vector<double> y(static_cast<std::size_t>(batch * channels * per_channel));
  i64 channel_offset = 0;  // where input i's channels start in the output
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    check_size(inputs[i], shapes[i], "concat input");
    for (i64 n = 0; n < batch; ++n)
      for (i64 c = 0; c < shapes[i][1]; ++c)
        for (i64 e = 0; e < per_channel; ++e) {
          y[static_cast<std::size_t>((n * channels + channel_offset + c) * per_channel + e)] =
              inputs[i][static_cast<std::size_t>((n * shapes[i][1] + c) * per_channel + e)];
        }
    channel_offset += shapes[i][1];
  }
  return y;
}

std::vector<std::vector<double>> concat_backward(std::span<const Shape> shapes, const std::vector<double>& dy) {
  i64 per_channel = 0, channels = 0;
  check_concat_shapes(shapes, per_channel, channels);
  const i64 batch = shapes[0][0];
  DPTRAIN_CHECK(static_cast<i64>(dy.size()) == batch * channels * per_channel, "reference concat: gradient size");
  std::vector<std::vector<double>> dx;
  i64 channel_offset = 0;
  for (const Shape& s : shapes) {
    std::vector<double> d(size_of(s));
    for (i64 n = 0; n < batch; ++n)
      for (i64 c = 0; c < s[1]; ++c)
        for (i64 e = 0; e < per_channel; ++e) {
          d[static_cast<std::size_t>((n * s[1] + c) * per_channel + e)] =
              dy[static_cast<std::size_t>((n * channels + channel_offset + c) * per_channel + e)];
        }
    dx.push_back(std::move(d));
    channel_offset += s[1];
  }
  return dx;
}

// ---- Add -----------------------------------------------------------------------------------------

std::vector<double> add_forward(const std::vector<double>& a, const std::vector<double>& b) {
  DPTRAIN_CHECK(a.size() == b.size(), "reference add: ", a.size(), " and ", b.size(), " values");
  std::vector<double> y(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) y[i] = a[i] + b[i];
  return y;
}

}  // namespace dptrain::testing::reference
