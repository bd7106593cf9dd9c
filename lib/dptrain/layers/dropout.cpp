#include "dptrain/layers/dropout.hpp"

#include "dptrain/core/philox.hpp"

namespace dptrain {

Dropout::Dropout(std::string name, float probability) : Layer(std::move(name)) {
  DPTRAIN_CHECK(probability >= 0.f && probability < 1.f, who(), ": probability must be in [0, 1), not ", probability);
  spec_.probability = probability;
}

Shape Dropout::setup(std::span<const Shape> inputs, Backend& backend) {
  spec_.who = who();
  check_input_count(inputs, 1);
  spec_.input = inputs[0];
  backend_ = &backend;
  plan_ = backend.make_dropout(spec_);
  return spec_.input;
}

void Dropout::forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) {
  check_input(*inputs[0], spec_.input, 0);
  last_forward_trained_ = ctx.training;
  if (!ctx.training) {
    backend_->copy(*inputs[0], output);
    return;
  }
  // One stream per (layer, epoch): the golden-ratio multiple spreads epochs across the 64-bit space.
  const std::uint64_t stream = stream_id(name().c_str()) ^ (ctx.epoch * 0x9E3779B97F4A7C15ull);
  plan_->forward(*inputs[0], output, RandomPosition{ctx.seed, stream, ctx.first_sample});
}

void Dropout::backward(std::span<const Tensor* const>, const Tensor&, const Tensor& doutput,
                       std::span<Tensor* const> dinputs) {
  if (dinputs[0] == nullptr) return;
  if (last_forward_trained_) {
    plan_->backward(doutput, *dinputs[0]);
  } else {
    backend_->copy(doutput, *dinputs[0]);
  }
}

}  // namespace dptrain
