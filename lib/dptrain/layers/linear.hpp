#pragma once
#include "dptrain/layers/initializers.hpp"
#include "dptrain/layers/layer.hpp"

namespace dptrain {

// Fully connected: [N, ...] -> [N, out_features]; the input is flattened per sample.
class Linear final : public Layer {
 public:
  Linear(std::string name, int out_features, bool bias = true, WeightInit init = WeightInit::he_normal);
  const char* kind() const override { return "linear"; }
  Shape setup(std::span<const Shape> inputs, Backend& backend) override;
  void forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) override;
  void backward(std::span<const Tensor* const> inputs, const Tensor& output, const Tensor& doutput,
                std::span<Tensor* const> dinputs) override;
  bool backward_reads_input(std::size_t) const override { return true; }
  bool backward_reads_output() const override { return false; }
  std::span<Parameter> parameters() override { return params_; }
  void initialize(std::uint64_t seed) override;
  double flops_per_sample() const override;

  Parameter& weight() { return params_.at(0); }
  Parameter& bias() { return params_.at(1); }

 private:
  LinearSpec spec_;
  WeightInit init_;
  Backend* backend_ = nullptr;
  std::unique_ptr<LinearPlan> plan_;
  std::vector<Parameter> params_;
};

}  // namespace dptrain
