#pragma once
#include "dptrain/layers/layer.hpp"

namespace dptrain {

class Relu final : public Layer {
 public:
  using Layer::Layer;
  const char* kind() const override { return "relu"; }
  Shape setup(std::span<const Shape> inputs, Backend& backend) override;
  void forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) override;
  void backward(std::span<const Tensor* const> inputs, const Tensor& output, const Tensor& doutput,
                std::span<Tensor* const> dinputs) override;
  bool backward_reads_input(std::size_t) const override { return false; }
  bool backward_reads_output() const override { return true; }
  bool runs_in_place() const override { return true; }

 private:
  Shape shape_;
  std::unique_ptr<ReluPlan> plan_;
};

}  // namespace dptrain
