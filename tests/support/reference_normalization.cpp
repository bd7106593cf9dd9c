#include "support/reference_normalization.hpp"

#include <algorithm>
#include <cmath>

#include "dptrain/core/error.hpp"
#include "dptrain/core/philox.hpp"

namespace dptrain::testing::reference {
namespace {
struct Nchw {
  std::int64_t n, c, h, w;
  std::size_t at(std::int64_t in, std::int64_t ic, std::int64_t ih, std::int64_t iw) const {
    return static_cast<std::size_t>(((in * c + ic) * h + ih) * w + iw);
  }
};

Nchw dims_of(const Shape& shape, std::size_t values, const char* who) {
  DPTRAIN_CHECK(shape.rank() == 4, who, ": the reference needs a 4-D shape, not ", shape.to_string());
  DPTRAIN_CHECK(static_cast<std::int64_t>(values) == shape.numel(), who, ": ", values, " values do not fill shape ",
                shape.to_string());
  return {shape[0], shape[1], shape[2], shape[3]};
}

// Per-channel mean and biased variance over N, H and W, in two passes (no cancellation).
void channel_statistics(const std::vector<double>& x, const Nchw& d, std::vector<double>& mean,
                        std::vector<double>& variance) {
  const auto count = static_cast<double>(d.n * d.h * d.w);
  mean.assign(static_cast<std::size_t>(d.c), 0.0);
  variance.assign(static_cast<std::size_t>(d.c), 0.0);
  for (std::int64_t c = 0; c < d.c; ++c) {
    double sum = 0;
    for (std::int64_t n = 0; n < d.n; ++n)
      for (std::int64_t h = 0; h < d.h; ++h)
        for (std::int64_t w = 0; w < d.w; ++w) sum += x[d.at(n, c, h, w)];
    const double m = sum / count;
    double squares = 0;
    for (std::int64_t n = 0; n < d.n; ++n)
      for (std::int64_t h = 0; h < d.h; ++h)
        for (std::int64_t w = 0; w < d.w; ++w) squares += (x[d.at(n, c, h, w)] - m) * (x[d.at(n, c, h, w)] - m);
    mean[static_cast<std::size_t>(c)] = m;
    variance[static_cast<std::size_t>(c)] = squares / count;
  }
}

// The LRN window of channel c: [c - (size-1)/2, c + (size-1)/2] clipped to the channels that exist.
std::int64_t window_begin(std::int64_t c, int size) { return std::max<std::int64_t>(0, c - (size - 1) / 2); }
std::int64_t window_end(std::int64_t c, int size, std::int64_t channels) {
  return std::min<std::int64_t>(channels, c + (size - 1) / 2 + 1);
}

// s = k + alpha / size * (sum of x^2 over the window), the base that LRN raises to beta.
std::vector<double> lrn_scale(const std::vector<double>& x, const Nchw& d, int size, double alpha, double k) {
  std::vector<double> s(x.size());
  for (std::int64_t n = 0; n < d.n; ++n)
    for (std::int64_t c = 0; c < d.c; ++c)
      for (std::int64_t h = 0; h < d.h; ++h)
        for (std::int64_t w = 0; w < d.w; ++w) {
          double sum = 0;
          for (std::int64_t j = window_begin(c, size); j < window_end(c, size, d.c); ++j) {
            sum += x[d.at(n, j, h, w)] * x[d.at(n, j, h, w)];
          }
          s[d.at(n, c, h, w)] = k + alpha / size * sum;
        }
  return s;
}

void check_labels(std::span<const std::int32_t> labels, std::int64_t rows, std::int64_t classes) {
  DPTRAIN_CHECK(static_cast<std::int64_t>(labels.size()) == rows, "reference softmax: ", labels.size(), " labels for ",
                rows, " rows");
  for (const std::int32_t label : labels) {
    DPTRAIN_CHECK(label >= 0 && label < classes, "reference softmax: label ", label, " out of range");
  }
}

// log(sum_c exp(z_c)) of one row, shifted by its maximum so nothing overflows or underflows.
double row_log_sum_exp(const std::vector<double>& logits, std::size_t row, std::int64_t classes) {
  const double top = *std::max_element(logits.begin() + static_cast<std::ptrdiff_t>(row),
                                       logits.begin() + static_cast<std::ptrdiff_t>(row) + classes);
  double sum = 0;
  for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(logits[row + static_cast<std::size_t>(c)] - top);
  return top + std::log(sum);
}

std::vector<double> softmax_rows(const std::vector<double>& logits, std::int64_t rows, std::int64_t classes) {
  std::vector<double> p(logits.size());
  for (std::int64_t n = 0; n < rows; ++n) {
    const auto row = static_cast<std::size_t>(n * classes);
    const double log_sum = row_log_sum_exp(logits, row, classes);
    for (std::int64_t c = 0; c < classes; ++c) p[row + c] = std::exp(logits[row + c] - log_sum);
  }
  return p;
}

double smoothed_target(std::int64_t c, std::int32_t label, std::int64_t classes, double smoothing) {
  return smoothing / static_cast<double>(classes) + (c == label ? 1.0 - smoothing : 0.0);
}
}  // namespace

BatchNormTraining batch_norm_training(const std::vector<double>& x, const Shape& shape,
                                      const std::vector<double>& scale, const std::vector<double>& shift,
                                      double epsilon) {
  const Nchw d = dims_of(shape, x.size(), "reference batch_norm");
  BatchNormTraining out;
  channel_statistics(x, d, out.mean, out.variance);
  out.y = batch_norm_inference(x, shape, scale, shift, out.mean, out.variance, epsilon);
  return out;
}

std::vector<double> batch_norm_inference(const std::vector<double>& x, const Shape& shape,
                                         const std::vector<double>& scale, const std::vector<double>& shift,
                                         const std::vector<double>& mean, const std::vector<double>& variance,
                                         double epsilon) {
  const Nchw d = dims_of(shape, x.size(), "reference batch_norm");
  std::vector<double> y(x.size());
  for (std::int64_t n = 0; n < d.n; ++n)
    for (std::int64_t c = 0; c < d.c; ++c) {
      const auto ci = static_cast<std::size_t>(c);
      const double inv_std = 1.0 / std::sqrt(variance[ci] + epsilon);
      for (std::int64_t h = 0; h < d.h; ++h)
        for (std::int64_t w = 0; w < d.w; ++w) {
          const std::size_t i = d.at(n, c, h, w);
          y[i] = scale[ci] * (x[i] - mean[ci]) * inv_std + shift[ci];
        }
    }
  return y;
}

BatchNormGradients batch_norm_backward(const std::vector<double>& x, const std::vector<double>& dy, const Shape& shape,
                                       const std::vector<double>& scale, double epsilon) {
  const Nchw d = dims_of(shape, x.size(), "reference batch_norm");
  std::vector<double> mean, variance;
  channel_statistics(x, d, mean, variance);
  const auto count = static_cast<double>(d.n * d.h * d.w);
  BatchNormGradients g;
  g.dx.assign(x.size(), 0.0);
  g.dscale.assign(static_cast<std::size_t>(d.c), 0.0);
  g.dshift.assign(static_cast<std::size_t>(d.c), 0.0);
  for (std::int64_t c = 0; c < d.c; ++c) {
    const auto ci = static_cast<std::size_t>(c);
    const double inv_std = 1.0 / std::sqrt(variance[ci] + epsilon);
    // dshift = sum dy, dscale = sum dy * xhat; the batch statistics' dependence on x gives
    // dx = scale / std * (dy - dshift / m - xhat * dscale / m).
    for (std::int64_t n = 0; n < d.n; ++n)
      for (std::int64_t h = 0; h < d.h; ++h)
        for (std::int64_t w = 0; w < d.w; ++w) {
          const std::size_t i = d.at(n, c, h, w);
          g.dshift[ci] += dy[i];
          g.dscale[ci] += dy[i] * (x[i] - mean[ci]) * inv_std;
        }
    for (std::int64_t n = 0; n < d.n; ++n)
      for (std::int64_t h = 0; h < d.h; ++h)
        for (std::int64_t w = 0; w < d.w; ++w) {
          const std::size_t i = d.at(n, c, h, w);
          const double xhat = (x[i] - mean[ci]) * inv_std;
          g.dx[i] = scale[ci] * inv_std * (dy[i] - g.dshift[ci] / count - xhat * g.dscale[ci] / count);
        }
  }
  return g;
}

std::vector<double> lrn_forward(const std::vector<double>& x, const Shape& shape, int size, double alpha, double beta,
                                double k) {
  const Nchw d = dims_of(shape, x.size(), "reference lrn");
  const std::vector<double> s = lrn_scale(x, d, size, alpha, k);
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * std::pow(s[i], -beta);
  return y;
}

std::vector<double> lrn_backward(const std::vector<double>& x, const std::vector<double>& dy, const Shape& shape,
                                 int size, double alpha, double beta, double k) {
  const Nchw d = dims_of(shape, x.size(), "reference lrn");
  const std::vector<double> s = lrn_scale(x, d, size, alpha, k);
  // y_i = x_i s_i^-beta with s_i = k + alpha/size sum_{j in W(i)} x_j^2, so
  // dx_j = dy_j s_j^-beta - 2 beta alpha/size x_j sum_{i : j in W(i)} dy_i x_i s_i^(-beta-1).
  // The clipped windows are symmetric (j in W(i) iff i in W(j)), so the last sum runs over W(j).
  std::vector<double> dx(x.size());
  for (std::int64_t n = 0; n < d.n; ++n)
    for (std::int64_t c = 0; c < d.c; ++c)
      for (std::int64_t h = 0; h < d.h; ++h)
        for (std::int64_t w = 0; w < d.w; ++w) {
          const std::size_t j = d.at(n, c, h, w);
          double through_others = 0;
          for (std::int64_t o = window_begin(c, size); o < window_end(c, size, d.c); ++o) {
            const std::size_t i = d.at(n, o, h, w);
            through_others += dy[i] * x[i] * std::pow(s[i], -beta - 1.0);
          }
          dx[j] = dy[j] * std::pow(s[j], -beta) - 2.0 * beta * alpha / size * x[j] * through_others;
        }
  return dx;
}

std::vector<double> relu_forward(const std::vector<double>& x) {
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] > 0 ? x[i] : 0.0;
  return y;
}

std::vector<double> relu_backward(const std::vector<double>& x, const std::vector<double>& dy) {
  std::vector<double> dx(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) dx[i] = x[i] > 0 ? dy[i] : 0.0;
  return dx;
}

std::vector<double> dropout_mask(const Shape& shape, double probability, std::uint64_t seed, std::uint64_t stream,
                                 std::int64_t first_sample) {
  const CounterRng rng(seed, stream);
  const std::int64_t per_sample = shape.per_sample();
  std::vector<double> mask(static_cast<std::size_t>(shape.numel()));
  for (std::int64_t n = 0; n < shape[0]; ++n) {
    for (std::int64_t e = 0; e < per_sample; ++e) {
      const auto word = static_cast<std::uint64_t>((first_sample + n) * per_sample + e);
      mask[static_cast<std::size_t>(n * per_sample + e)] =
          static_cast<double>(rng.uniform(word)) >= probability ? 1.0 / (1.0 - probability) : 0.0;
    }
  }
  return mask;
}

SoftmaxCrossEntropyResult softmax_cross_entropy(const std::vector<double>& logits, std::int64_t rows,
                                                std::int64_t classes, std::span<const std::int32_t> labels,
                                                double label_smoothing) {
  check_labels(labels, rows, classes);
  SoftmaxCrossEntropyResult out;
  out.probabilities = softmax_rows(logits, rows, classes);
  double total = 0;
  for (std::int64_t n = 0; n < rows; ++n) {
    // log p from the logits directly (log-sum-exp), so a probability that underflows costs no infinity.
    const auto row = static_cast<std::size_t>(n * classes);
    const double log_sum = row_log_sum_exp(logits, row, classes);
    for (std::int64_t c = 0; c < classes; ++c) {
      total -= smoothed_target(c, labels[static_cast<std::size_t>(n)], classes, label_smoothing) *
               (logits[row + c] - log_sum);
    }
  }
  out.loss = total / static_cast<double>(rows);
  return out;
}

std::vector<double> softmax_cross_entropy_backward(const std::vector<double>& logits, std::int64_t rows,
                                                   std::int64_t classes, std::span<const std::int32_t> labels,
                                                   double label_smoothing, double loss_weight) {
  check_labels(labels, rows, classes);
  const std::vector<double> p = softmax_rows(logits, rows, classes);
  std::vector<double> d(p.size());
  for (std::int64_t n = 0; n < rows; ++n) {
    for (std::int64_t c = 0; c < classes; ++c) {
      const auto i = static_cast<std::size_t>(n * classes + c);
      d[i] = loss_weight / static_cast<double>(rows) *
             (p[i] - smoothed_target(c, labels[static_cast<std::size_t>(n)], classes, label_smoothing));
    }
  }
  return d;
}

}  // namespace dptrain::testing::reference
