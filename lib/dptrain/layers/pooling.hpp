#pragma once
#include "dptrain/layers/layer.hpp"

namespace dptrain {

// Max or average pooling; `rounding` ceil reproduces Caffe's output sizes (GoogLeNet).
class Pooling final : public Layer {
 public:
  Pooling(std::string name, PoolingKind pooling, Window2d window, Rounding rounding = Rounding::floor);
  const char* kind() const override { return "pooling"; }
  Shape setup(std::span<const Shape> inputs, Backend& backend) override;
  void forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) override;
  void backward(std::span<const Tensor* const> inputs, const Tensor& output, const Tensor& doutput,
                std::span<Tensor* const> dinputs) override;
  bool backward_reads_input(std::size_t) const override { return false; }
  bool backward_reads_output() const override { return false; }
  std::size_t saved_state_bytes() const override;

 private:
  PoolingSpec spec_;
  std::unique_ptr<PoolingPlan> plan_;
};

}  // namespace dptrain
