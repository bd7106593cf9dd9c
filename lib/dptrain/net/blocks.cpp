#include "dptrain/net/blocks.hpp"

#include "dptrain/layers/batch_norm.hpp"
#include "dptrain/layers/concat.hpp"
#include "dptrain/layers/convolution.hpp"
#include "dptrain/layers/dropout.hpp"
#include "dptrain/layers/linear.hpp"
#include "dptrain/layers/pooling.hpp"
#include "dptrain/layers/relu.hpp"
#include "dptrain/layers/softmax_cross_entropy.hpp"

namespace dptrain::blocks {

int conv_relu(NetBuilder& b, const std::string& name, int input, int out_channels, Window2d window, WeightInit init) {
  const int conv = b.add(std::make_unique<Convolution>(name, out_channels, window, true, init), {input});
  return relu(b, name + "/relu", conv);
}

int conv_bn(NetBuilder& b, const std::string& name, int input, int out_channels, Window2d window, float epsilon) {
  const int conv = b.add(std::make_unique<Convolution>(name, out_channels, window, false), {input});
  return b.add(std::make_unique<BatchNorm>(name + "/bn", epsilon), {conv});
}

int conv_bn_add_relu(NetBuilder& b, const std::string& name, int input, int residual, int out_channels, Window2d window,
                     float epsilon) {
  const int conv = b.add(std::make_unique<Convolution>(name, out_channels, window, false), {input});
  return b.add(std::make_unique<BatchNorm>(name + "/bn", epsilon, 0.1f, BatchNormJoin::add_relu), {conv, residual});
}

int conv_bn_relu(NetBuilder& b, const std::string& name, int input, int out_channels, Window2d window, bool conv_bias,
                 float epsilon) {
  const int conv = b.add(std::make_unique<Convolution>(name, out_channels, window, conv_bias), {input});
  const int bn = b.add(std::make_unique<BatchNorm>(name + "/bn", epsilon), {conv});
  return relu(b, name + "/relu", bn);
}

int relu(NetBuilder& b, const std::string& name, int input) { return b.add(std::make_unique<Relu>(name), {input}); }

int max_pool(NetBuilder& b, const std::string& name, int input, Window2d window, Rounding rounding) {
  return b.add(std::make_unique<Pooling>(name, PoolingKind::max, window, rounding), {input});
}

int avg_pool(NetBuilder& b, const std::string& name, int input, Window2d window, PoolingKind kind, Rounding rounding) {
  return b.add(std::make_unique<Pooling>(name, kind, window, rounding), {input});
}

int global_avg_pool(NetBuilder& b, const std::string& name, int input) {
  const Shape& s = b.shape(input);
  const Window2d whole{static_cast<int>(s[2]), static_cast<int>(s[3]), 1, 1, 0, 0};
  return avg_pool(b, name, input, whole);
}

int linear(NetBuilder& b, const std::string& name, int input, int out_features, WeightInit init) {
  return b.add(std::make_unique<Linear>(name, out_features, true, init), {input});
}

int dropout(NetBuilder& b, const std::string& name, int input, float probability) {
  return b.add(std::make_unique<Dropout>(name, probability), {input});
}

int concat(NetBuilder& b, const std::string& name, std::vector<int> inputs) {
  return b.add(std::make_unique<Concat>(name), std::move(inputs));
}

int loss(NetBuilder& b, const std::string& name, int logits, float weight, float label_smoothing, bool training_only) {
  return b.add_loss(std::make_unique<SoftmaxCrossEntropy>(name, label_smoothing, weight), logits, training_only);
}

}  // namespace dptrain::blocks
