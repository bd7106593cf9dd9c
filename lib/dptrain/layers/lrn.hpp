#pragma once
#include "dptrain/layers/layer.hpp"

namespace dptrain {

// Local response normalization across channels (Krizhevsky et al. 2012), as in GoogLeNet.
class Lrn final : public Layer {
 public:
  Lrn(std::string name, int size = 5, float alpha = 1e-4f, float beta = 0.75f, float k = 1.f);
  const char* kind() const override { return "lrn"; }
  Shape setup(std::span<const Shape> inputs, Backend& backend) override;
  void forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) override;
  void backward(std::span<const Tensor* const> inputs, const Tensor& output, const Tensor& doutput,
                std::span<Tensor* const> dinputs) override;
  bool backward_reads_input(std::size_t) const override { return true; }
  bool backward_reads_output() const override { return false; }
  std::size_t saved_state_bytes() const override { return static_cast<std::size_t>(spec_.input.numel()) * 4; }

 private:
  LrnSpec spec_;
  std::unique_ptr<LrnPlan> plan_;
};

}  // namespace dptrain
