#pragma once
#include "dptrain/layers/layer.hpp"

namespace dptrain {

// Concatenates its inputs along channels (the end of an inception module).
class Concat final : public Layer {
 public:
  using Layer::Layer;
  const char* kind() const override { return "concat"; }
  Shape setup(std::span<const Shape> inputs, Backend& backend) override;
  void forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) override;
  void backward(std::span<const Tensor* const> inputs, const Tensor& output, const Tensor& doutput,
                std::span<Tensor* const> dinputs) override;
  bool backward_reads_input(std::size_t) const override { return false; }
  bool backward_reads_output() const override { return false; }

 private:
  std::vector<Shape> inputs_;
  std::unique_ptr<ConcatPlan> plan_;
  Backend* backend_ = nullptr;
  std::vector<Tensor> scratch_;  // where gradients go for inputs that need none
};

}  // namespace dptrain
