#pragma once
#include "dptrain/layers/layer.hpp"

namespace dptrain {

// Batch normalization (Ioffe & Szegedy 2015) per channel. Training normalizes with the batch's
// statistics and updates running averages (running = (1 - momentum) running + momentum batch, with the
// unbiased batch variance); inference normalizes with the running averages.
//
// As a residual join (BatchNormJoin::add_relu) it takes a second input z of the same shape and gives
// y = max(0, bn(x) + z): ResNet's last batch norm of a block, its shortcut sum and the ReLU after it
// in one layer, whose backward masks the gradient once into z's gradient and normalises from there
// (no ReLU pass, no copy of the sum's gradient). A plan that joins_residual() (our CUDA kernels) does
// all of it in the normalisation's own passes; otherwise the layer composes it.
enum class BatchNormJoin { none, add_relu };

class BatchNorm final : public Layer {
 public:
  explicit BatchNorm(std::string name, float epsilon = 1e-5f, float momentum = 0.1f,
                     BatchNormJoin join = BatchNormJoin::none);
  const char* kind() const override { return "batch_norm"; }
  Shape setup(std::span<const Shape> inputs, Backend& backend) override;
  void forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) override;
  void backward(std::span<const Tensor* const> inputs, const Tensor& output, const Tensor& doutput,
                std::span<Tensor* const> dinputs) override;
  bool backward_reads_input(std::size_t index) const override { return index == 0; }        // never z
  bool backward_reads_output() const override { return join_ == BatchNormJoin::add_relu; }  // the mask
  std::span<Parameter> parameters() override { return params_; }
  std::span<Buffer> buffers() override { return buffers_; }
  void initialize(std::uint64_t seed) override;
  // A ReLU in place on the output is applied in the normalisation's own pass, and its backward in the
  // normalisation's backward (which then reads the output for the ReLU's mask).
  bool fuse_relu() override;
  bool can_fuse_relu_backward() const override { return join_ == BatchNormJoin::none; }
  void fuse_relu_backward() override;

  Parameter& scale() { return params_.at(0); }
  Parameter& shift() { return params_.at(1); }
  Tensor& running_mean() { return buffers_.at(0).value; }
  Tensor& running_variance() { return buffers_.at(1).value; }

 private:
  void join(std::span<const Tensor* const> inputs, Tensor& output);  // add_relu: y = max(0, y + z)

  BatchNormSpec spec_;
  float momentum_;
  BatchNormJoin join_;
  Backend* backend_ = nullptr;
  std::unique_ptr<BatchNormPlan> plan_;
  std::unique_ptr<ReluPlan> relu_;  // add_relu composed here (the plan does not join): the backward's mask
  std::vector<Parameter> params_;
  std::vector<Buffer> buffers_;
  Tensor batch_mean_, batch_variance_;  // from the latest training forward, for the backward pass
  Tensor unused_dx_, unused_dz_;
};

}  // namespace dptrain
