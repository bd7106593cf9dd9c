#pragma once
// Factories for the CUDA plans, one source file each; CudaBackend hands them out.
#include "dptrain/backend/backend.hpp"
#include "dptrain/backend/cuda/context.hpp"

namespace dptrain::cuda {

std::unique_ptr<ConvolutionPlan> make_convolution(CudaContextPtr ctx, const ConvolutionSpec& spec);
std::unique_ptr<PoolingPlan> make_pooling(CudaContextPtr ctx, const PoolingSpec& spec);
std::unique_ptr<BatchNormPlan> make_batch_norm(CudaContextPtr ctx, const BatchNormSpec& spec);
std::unique_ptr<ReluPlan> make_relu(CudaContextPtr ctx, const Shape& shape, const std::string& who);
std::unique_ptr<LrnPlan> make_lrn(CudaContextPtr ctx, const LrnSpec& spec);
std::unique_ptr<LinearPlan> make_linear(CudaContextPtr ctx, const LinearSpec& spec);
std::unique_ptr<ConcatPlan> make_concat(CudaContextPtr ctx, std::span<const Shape> inputs, const std::string& who);
std::unique_ptr<SoftmaxCrossEntropyPlan> make_softmax_cross_entropy(CudaContextPtr ctx,
                                                                    const SoftmaxCrossEntropySpec& spec);
std::unique_ptr<DropoutPlan> make_dropout(CudaContextPtr ctx, const DropoutSpec& spec);

}  // namespace dptrain::cuda
