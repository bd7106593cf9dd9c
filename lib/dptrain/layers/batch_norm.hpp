#pragma once
#include "dptrain/layers/layer.hpp"

namespace dptrain {

// Batch normalization (Ioffe & Szegedy 2015) per channel. Training normalizes with the batch's
// statistics and updates running averages (running = (1 - momentum) running + momentum batch, with the
// unbiased batch variance); inference normalizes with the running averages.
class BatchNorm final : public Layer {
 public:
  explicit BatchNorm(std::string name, float epsilon = 1e-5f, float momentum = 0.1f);
  const char* kind() const override { return "batch_norm"; }
  Shape setup(std::span<const Shape> inputs, Backend& backend) override;
  void forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) override;
  void backward(std::span<const Tensor* const> inputs, const Tensor& output, const Tensor& doutput,
                std::span<Tensor* const> dinputs) override;
  bool backward_reads_input(std::size_t) const override { return true; }
  bool backward_reads_output() const override { return false; }
  std::span<Parameter> parameters() override { return params_; }
  std::span<Buffer> buffers() override { return buffers_; }
  void initialize(std::uint64_t seed) override;
  // A ReLU in place on the output is applied in the normalisation's own pass, and its backward in the
  // normalisation's backward (which then reads the output for the ReLU's mask).
  bool fuse_relu() override;
  bool can_fuse_relu_backward() const override { return true; }
  void fuse_relu_backward() override;

  Parameter& scale() { return params_.at(0); }
  Parameter& shift() { return params_.at(1); }
  Tensor& running_mean() { return buffers_.at(0).value; }
  Tensor& running_variance() { return buffers_.at(1).value; }

 private:
  BatchNormSpec spec_;
  float momentum_;
  Backend* backend_ = nullptr;
  std::unique_ptr<BatchNormPlan> plan_;
  std::vector<Parameter> params_;
  std::vector<Buffer> buffers_;
  Tensor batch_mean_, batch_variance_;  // from the latest training forward, for the backward pass
  Tensor unused_dx_;
};

}  // namespace dptrain
