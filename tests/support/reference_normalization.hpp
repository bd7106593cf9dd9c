#pragma once
// Naive double-precision references for the normalization and element-wise layers (batch norm, LRN,
// ReLU, dropout, softmax cross-entropy). Plain loops over NCHW data in std::vector<double>, written
// from the papers' and Caffe's formulas rather than from the library, so that a test comparing the
// two checks the library against an independent derivation.
#include <cstdint>
#include <span>
#include <vector>

#include "dptrain/core/shape.hpp"

namespace dptrain::testing::reference {

// Batch normalization over a 4-D [N,C,H,W] input, statistics per channel over N, H and W.
struct BatchNormTraining {
  std::vector<double> y;
  std::vector<double> mean;      // per channel
  std::vector<double> variance;  // per channel, biased (divided by N*H*W), as the forward pass uses it
};
BatchNormTraining batch_norm_training(const std::vector<double>& x, const Shape& shape,
                                      const std::vector<double>& scale, const std::vector<double>& shift,
                                      double epsilon);
// y = scale * (x - mean) / sqrt(variance + epsilon) + shift with the given (running) statistics.
std::vector<double> batch_norm_inference(const std::vector<double>& x, const Shape& shape,
                                         const std::vector<double>& scale, const std::vector<double>& shift,
                                         const std::vector<double>& mean, const std::vector<double>& variance,
                                         double epsilon);
struct BatchNormGradients {
  std::vector<double> dx;
  std::vector<double> dscale;
  std::vector<double> dshift;
};
// The gradients of the training forward (batch statistics recomputed from x).
BatchNormGradients batch_norm_backward(const std::vector<double>& x, const std::vector<double>& dy, const Shape& shape,
                                       const std::vector<double>& scale, double epsilon);

// Local response normalization across channels, as Caffe and oneDNN define it:
// y = x / (k + alpha / size * sum over the `size` channels centred on c, clipped at the edges, of x^2)^beta.
std::vector<double> lrn_forward(const std::vector<double>& x, const Shape& shape, int size, double alpha, double beta,
                                double k);
std::vector<double> lrn_backward(const std::vector<double>& x, const std::vector<double>& dy, const Shape& shape,
                                 int size, double alpha, double beta, double k);

std::vector<double> relu_forward(const std::vector<double>& x);
std::vector<double> relu_backward(const std::vector<double>& x, const std::vector<double>& dy);

// The inverted-dropout mask of specs.hpp's RandomPosition contract: element e of sample s (global
// index first_sample + n) draws uniform word (s * per_sample + e) of Philox stream (seed, stream) and is
// kept (scaled by 1 / (1 - p)) when that draw is >= p. Entries are 0 or 1 / (1 - p).
std::vector<double> dropout_mask(const Shape& shape, double probability, std::uint64_t seed, std::uint64_t stream,
                                 std::int64_t first_sample);

// Softmax cross-entropy on [rows, classes] logits with label smoothing e: the target is (1 - e) on
// the label plus e / classes on every class; the loss is the mean over rows.
struct SoftmaxCrossEntropyResult {
  std::vector<double> probabilities;
  double loss = 0;
};
SoftmaxCrossEntropyResult softmax_cross_entropy(const std::vector<double>& logits, std::int64_t rows,
                                                std::int64_t classes, std::span<const std::int32_t> labels,
                                                double label_smoothing);
// d(loss_weight * loss)/d(logits) = loss_weight / rows * (p - target).
std::vector<double> softmax_cross_entropy_backward(const std::vector<double>& logits, std::int64_t rows,
                                                   std::int64_t classes, std::span<const std::int32_t> labels,
                                                   double label_smoothing, double loss_weight);

}  // namespace dptrain::testing::reference
