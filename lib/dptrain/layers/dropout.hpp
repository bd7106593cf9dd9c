#pragma once
#include "dptrain/layers/layer.hpp"

namespace dptrain {

// Inverted dropout. The mask of sample s in epoch e depends only on (seed, layer name, e, s), so
// N ranks drop exactly what one rank with the whole batch would.
class Dropout final : public Layer {
 public:
  Dropout(std::string name, float probability);
  const char* kind() const override { return "dropout"; }
  Shape setup(std::span<const Shape> inputs, Backend& backend) override;
  void forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) override;
  void backward(std::span<const Tensor* const> inputs, const Tensor& output, const Tensor& doutput,
                std::span<Tensor* const> dinputs) override;

 private:
  DropoutSpec spec_;
  Backend* backend_ = nullptr;
  std::unique_ptr<DropoutPlan> plan_;
  bool last_forward_trained_ = false;
};

}  // namespace dptrain
