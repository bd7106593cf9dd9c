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
  bool backward_reads_input(std::size_t) const override { return false; }
  bool backward_reads_output() const override { return false; }
  std::size_t saved_state_bytes() const override { return static_cast<std::size_t>(spec_.input.numel()) * 4; }

 private:
  DropoutSpec spec_;
  Backend* backend_ = nullptr;
  std::unique_ptr<DropoutPlan> plan_;
  bool last_forward_trained_ = false;
};

}  // namespace dptrain
