#pragma once
// Factories for the CPU plans, one source file each; OneDnnBackend hands them out.
#include "dptrain/backend/backend.hpp"
#include "dptrain/backend/cpu/dnnl_context.hpp"

namespace dptrain::cpu {

std::unique_ptr<ConvolutionPlan> make_convolution(DnnlContextPtr ctx, const ConvolutionSpec& spec);
std::unique_ptr<PoolingPlan> make_pooling(DnnlContextPtr ctx, const PoolingSpec& spec);
std::unique_ptr<BatchNormPlan> make_batch_norm(DnnlContextPtr ctx, const BatchNormSpec& spec);
std::unique_ptr<ReluPlan> make_relu(DnnlContextPtr ctx, const Shape& shape, const std::string& who);
std::unique_ptr<LrnPlan> make_lrn(DnnlContextPtr ctx, const LrnSpec& spec);
std::unique_ptr<LinearPlan> make_linear(DnnlContextPtr ctx, const LinearSpec& spec);
std::unique_ptr<ConcatPlan> make_concat(DnnlContextPtr ctx, std::span<const Shape> inputs, const std::string& who);
std::unique_ptr<SoftmaxCrossEntropyPlan> make_softmax_cross_entropy(const SoftmaxCrossEntropySpec& spec);
std::unique_ptr<DropoutPlan> make_dropout(const DropoutSpec& spec);

}  // namespace dptrain::cpu
