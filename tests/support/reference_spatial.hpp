#pragma once
// Naive double-precision references for the spatial layers (convolution, pooling, linear, concat,
// add): plain loops over NCHW std::vector<double>, written for obviousness, not speed, so that the
// backends' fast paths (blocked layouts, JIT kernels, memcpy blocks) are checked against arithmetic
// that can be read at a glance. Inputs are the fp32 test tensors widened with testing::to_double, so
// the only difference left between backend and reference is the backend's fp32 rounding.
#include <span>
#include <vector>

#include "dptrain/backend/specs.hpp"

namespace dptrain::testing::reference {

// ---- Convolution (cross-correlation, as in every framework) -------------------------------------
// x: spec.input [N, C, H, W]; weight: [out_channels, C, kernel_h, kernel_w]; bias: [out_channels] or
// empty when spec.bias is false. The output size uses floor rounding, like the layer.
Shape convolution_output(const ConvolutionSpec& spec);
std::vector<double> convolution_forward(const ConvolutionSpec& spec, const std::vector<double>& x,
                                        const std::vector<double>& weight, const std::vector<double>& bias);
// dx = the transpose of the forward map applied to dy.
std::vector<double> convolution_backward_data(const ConvolutionSpec& spec, const std::vector<double>& dy,
                                              const std::vector<double>& weight);
struct ConvolutionWeightGrads {
  std::vector<double> weight;
  std::vector<double> bias;  // empty when spec.bias is false
};
ConvolutionWeightGrads convolution_backward_weights(const ConvolutionSpec& spec, const std::vector<double>& x,
                                                    const std::vector<double>& dy);

// ---- Pooling ------------------------------------------------------------------------------------
// Output sizes come from dptrain::window_output_size (floor or Caffe's ceil). Ceil rounding may ask
// for `extra_pad_after` rows/columns past the symmetric padding; these padded positions are treated
// like any other padding:
//   max                      - padding never wins (only in-image positions are candidates);
//   average_include_padding  - divides by kernel_h * kernel_w always, extra padding included
//                              (oneDNN's pooling_avg_include_padding);
//   average_exclude_padding  - divides by the number of in-image positions of the window.
// Max pooling ties go to the first position in row-major window order; tests use distinct inputs.
Shape pooling_output(const PoolingSpec& spec);
std::vector<double> pooling_forward(const PoolingSpec& spec, const std::vector<double>& x);
// `x` is needed by max pooling only (to find each window's maximum again).
std::vector<double> pooling_backward(const PoolingSpec& spec, const std::vector<double>& x,
                                     const std::vector<double>& dy);

// ---- Linear: y = x W^T + b, x read as [N, features] ----------------------------------------------
// weight: [out_features, features]; bias: [out_features] or empty when spec.bias is false.
std::vector<double> linear_forward(const LinearSpec& spec, const std::vector<double>& x,
                                   const std::vector<double>& weight, const std::vector<double>& bias);
std::vector<double> linear_backward_data(const LinearSpec& spec, const std::vector<double>& dy,
                                         const std::vector<double>& weight);
struct LinearWeightGrads {
  std::vector<double> weight;
  std::vector<double> bias;  // empty when spec.bias is false
};
LinearWeightGrads linear_backward_weights(const LinearSpec& spec, const std::vector<double>& x,
                                          const std::vector<double>& dy);

// ---- Concat along channels (axis 1) and its inverse -----------------------------------------------
// Shapes must agree in every axis but 1; the references check this themselves (no library call).
std::vector<double> concat_forward(std::span<const Shape> shapes, const std::vector<std::vector<double>>& inputs);
std::vector<std::vector<double>> concat_backward(std::span<const Shape> shapes, const std::vector<double>& dy);

// ---- Add --------------------------------------------------------------------------------------------
std::vector<double> add_forward(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace dptrain::testing::reference
