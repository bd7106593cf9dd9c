#pragma once
#include "dptrain/layers/layer.hpp"

namespace dptrain {

// Element-wise sum of two tensors of one shape (ResNet's shortcut).
class Add final : public Layer {
 public:
  using Layer::Layer;
  const char* kind() const override { return "add"; }
  Shape setup(std::span<const Shape> inputs, Backend& backend) override;
  void forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) override;
  void backward(std::span<const Tensor* const> inputs, const Tensor& output, const Tensor& doutput,
                std::span<Tensor* const> dinputs) override;
  bool backward_reads_input(std::size_t) const override { return false; }
  bool backward_reads_output() const override { return false; }
  // The sum may be written over input 0 (ResNet's branch, read by nothing else) and input 0's gradient,
  // which is the output's gradient itself, then shares its memory: the backward copies it only to input 1.
  bool runs_in_place() const override { return true; }
  // A ReLU in place on the sum (ResNet's join) is applied in the sum's own pass.
  bool fuse_relu() override {
    relu_ = true;
    return true;
  }

 private:
  Shape shape_;
  bool relu_ = false;
  Backend* backend_ = nullptr;
};

}  // namespace dptrain
