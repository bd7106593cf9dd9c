#include "dptrain/layers/pooling.hpp"

namespace dptrain {

Pooling::Pooling(std::string name, PoolingKind pooling, Window2d window, Rounding rounding) : Layer(std::move(name)) {
  spec_.kind = pooling;
  spec_.window = window;
  spec_.rounding = rounding;
}

Shape Pooling::setup(std::span<const Shape> inputs, Backend& backend) {
  spec_.who = who();
  check_input_count(inputs, 1);
  spec_.input = inputs[0];
  const Shape output = pooling_output_shape(spec_, who());
  plan_ = backend.make_pooling(spec_);
  return output;
}

std::size_t Pooling::saved_state_bytes() const {
  // Max pooling keeps where each maximum came from (int32 on the GPU, a byte index on the CPU).
  if (spec_.kind != PoolingKind::max) return 0;
  return static_cast<std::size_t>(pooling_output_shape(spec_, who()).numel()) * 4;
}

void Pooling::forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) {
  check_input(*inputs[0], spec_.input, 0);
  plan_->forward(*inputs[0], output, ctx.training);
}

void Pooling::backward(std::span<const Tensor* const>, const Tensor&, const Tensor& doutput,
                       std::span<Tensor* const> dinputs) {
  if (dinputs[0] != nullptr) plan_->backward(doutput, *dinputs[0]);
}

}  // namespace dptrain
