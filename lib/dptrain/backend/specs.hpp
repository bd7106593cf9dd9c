#pragma once
// What a layer asks the backend for. A spec fixes the shapes and hyper-parameters of one op; the
// backend turns it into a plan once (like a cuDNN descriptor or a oneDNN primitive) and the plan runs
// every step. The output-shape arithmetic lives here, once, for every backend.
#include <cstdint>
#include <span>
#include <string>

#include "dptrain/core/shape.hpp"

namespace dptrain {

// A 2-D sliding window: kernel, stride and (symmetric) zero padding, height and width apart so that
// Inception-V3's 1x7 and 7x1 convolutions are expressible.
struct Window2d {
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;

  static Window2d square(int kernel, int stride = 1, int pad = 0) { return {kernel, kernel, stride, stride, pad, pad}; }
};

enum class Rounding { floor, ceil };  // output size rounding; Caffe's pooling rounds up (ceil)

struct ConvolutionSpec {
  Shape input;  // N, C, H, W
  int out_channels = 0;
  Window2d window;
  bool bias = true;
  // Apply a ReLU to the output in the forward pass (oneDNN post-op; a kernel after cuDNN's): the net
  // asks for it when a ReLU runs in place on this output, and skips that ReLU's forward.
  bool fuse_relu = false;
  // backward_data adds the input gradient to what dx holds (cuDNN's beta = 1) instead of writing it:
  // the net asks for it where another consumer of the input wrote its gradient first. Only where
  // Backend::accumulates_convolution_input_gradient() says so (oneDNN has no sum for backward data).
  bool accumulate_input_gradient = false;
  std::string who = "convolution";  // how errors name the op: layers put "<kind> '<name>'" here
};

enum class PoolingKind { max, average_include_padding, average_exclude_padding };

struct PoolingSpec {
  Shape input;
  PoolingKind kind = PoolingKind::max;
  Window2d window;
  Rounding rounding = Rounding::floor;
  std::string who = "pooling";  // how errors name the op: layers put "<kind> '<name>'" here
};

struct BatchNormSpec {
  Shape input;  // N, C, H, W; statistics per channel over N, H, W
  float epsilon = 1e-5f;
  // y = max(0, batch norm of x) in the forward passes: a ReLU in place on the output, applied in the
  // same pass.
  bool fuse_relu = false;
  // With fuse_relu: the ReLU's backward too, in the normalisation's backward (which then gets the
  // ReLU's output gradient and masks it by y > 0 before its sums) instead of a pass of its own.
  bool fuse_relu_backward = false;
  std::string who = "batch_norm";  // how errors name the op: layers put "<kind> '<name>'" here
};

struct LrnSpec {  // across channels: y = x / (k + alpha / size * sum over size channels of x^2)^beta
  Shape input;
  int size = 5;
  float alpha = 1e-4f;
  float beta = 0.75f;
  float k = 1.0f;
  std::string who = "lrn";  // how errors name the op: layers put "<kind> '<name>'" here
};

struct LinearSpec {  // input [N, ...] is read as [N, features]
  Shape input;
  int out_features = 0;
  bool bias = true;
  std::string who = "linear";  // how errors name the op: layers put "<kind> '<name>'" here
};

struct SoftmaxCrossEntropySpec {  // logits [N, classes], labels int32 [N]
  Shape logits;
  float label_smoothing = 0.0f;
  std::string who = "softmax_cross_entropy";  // how errors name the op: layers put "<kind> '<name>'" here
};

struct DropoutSpec {
  Shape input;
  float probability = 0.5f;     // of dropping an element
  std::string who = "dropout";  // how errors name the op: layers put "<kind> '<name>'" here
};

// Where the randomness of one step comes from: element e of sample s (a global sample index) draws
// word (s * per_sample + e) of the stream (seed, stream), so masks are the same on any number of ranks.
struct RandomPosition {
  std::uint64_t seed = 0;
  std::uint64_t stream = 0;
  std::int64_t first_sample = 0;
};

// What an SGD step shares across parameters (each parameter's decay is in its SgdTensors).
struct SgdHyper {
  float learning_rate = 0.1f;
  float momentum = 0.9f;
  bool nesterov = false;
};

// Output shapes. They throw dptrain::Error naming `who` when the input does not fit the window.
Shape convolution_output_shape(const ConvolutionSpec& spec, const std::string& who);
Shape convolution_weight_shape(const ConvolutionSpec& spec);
Shape pooling_output_shape(const PoolingSpec& spec, const std::string& who);
Shape linear_weight_shape(const LinearSpec& spec);
Shape linear_output_shape(const LinearSpec& spec, const std::string& who);  // [N, out_features]
// Inputs must agree in every axis but channels (axis 1); the output has the channels summed.
Shape concat_output_shape(std::span<const Shape> inputs, const std::string& who);
// Output size of one spatial axis; `extra_pad_after` receives the padding ceil rounding adds at the end.
std::int64_t window_output_size(std::int64_t input, int kernel, int stride, int pad, Rounding rounding,
                                std::int64_t* extra_pad_after = nullptr);

}  // namespace dptrain
