#pragma once
#include "dptrain/layers/initializers.hpp"
#include "dptrain/layers/layer.hpp"

namespace dptrain {

class Convolution final : public Layer {
 public:
  Convolution(std::string name, int out_channels, Window2d window, bool bias = true,
              WeightInit init = WeightInit::he_normal);
  const char* kind() const override { return "convolution"; }
  Shape setup(std::span<const Shape> inputs, Backend& backend) override;
  void forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) override;
  void backward(std::span<const Tensor* const> inputs, const Tensor& output, const Tensor& doutput,
                std::span<Tensor* const> dinputs) override;
  bool backward_reads_input(std::size_t) const override { return true; }
  bool backward_reads_output() const override { return false; }
  std::span<Parameter> parameters() override { return params_; }
  void initialize(std::uint64_t seed) override;
  double flops_per_sample() const override;
  bool fuse_relu() override;
  // Where the backend can (cuDNN): the input gradient added to another consumer's, no scratch.
  bool can_accumulate_input_gradient(std::size_t input) const override;
  void accumulate_input_gradient(std::size_t input) override;

  Parameter& weight() { return params_.at(0); }
  Parameter& bias() { return params_.at(1); }  // only when built with a bias

 private:
  ConvolutionSpec spec_;
  WeightInit init_;
  Shape output_;
  Backend* backend_ = nullptr;
  std::unique_ptr<ConvolutionPlan> plan_;
  std::vector<Parameter> params_;
};

}  // namespace dptrain
