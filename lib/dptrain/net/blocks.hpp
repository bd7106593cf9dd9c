#pragma once
// Building blocks the model files share: a convolution followed by ReLU (Caffe style, with bias) or by
// batch norm and ReLU (the BN style), pooling, the classifier head. Each returns the output node.
#include <string>

#include "dptrain/layers/initializers.hpp"
#include "dptrain/net/net_builder.hpp"

namespace dptrain::blocks {

int conv_relu(NetBuilder& b, const std::string& name, int input, int out_channels, Window2d window,
              WeightInit init = WeightInit::he_normal);
// Convolution (bias optional: redundant before batch norm), batch norm with `epsilon`, ReLU.
int conv_bn_relu(NetBuilder& b, const std::string& name, int input, int out_channels, Window2d window,
                 bool conv_bias = false, float epsilon = 1e-5f);
int conv_bn(NetBuilder& b, const std::string& name, int input, int out_channels, Window2d window,
            float epsilon = 1e-5f);
// Convolution (no bias) and a batch norm that joins `residual`: relu(bn(conv(input)) + residual), the
// residual built before (BatchNormJoin::add_relu).
int conv_bn_add_relu(NetBuilder& b, const std::string& name, int input, int residual, int out_channels, Window2d window,
                     float epsilon = 1e-5f);
int relu(NetBuilder& b, const std::string& name, int input);
int max_pool(NetBuilder& b, const std::string& name, int input, Window2d window, Rounding rounding = Rounding::floor);
int avg_pool(NetBuilder& b, const std::string& name, int input, Window2d window,
             PoolingKind kind = PoolingKind::average_include_padding, Rounding rounding = Rounding::floor);
// Average over the whole spatial extent.
int global_avg_pool(NetBuilder& b, const std::string& name, int input);
int linear(NetBuilder& b, const std::string& name, int input, int out_features,
           WeightInit init = WeightInit::he_normal);
int dropout(NetBuilder& b, const std::string& name, int input, float probability);
int concat(NetBuilder& b, const std::string& name, std::vector<int> inputs);
// The classifier loss on `logits`, weighted (auxiliary heads weigh less and train only).
int loss(NetBuilder& b, const std::string& name, int logits, float weight = 1.f, float label_smoothing = 0.f,
         bool training_only = false);

}  // namespace dptrain::blocks
