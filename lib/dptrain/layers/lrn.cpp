#include "dptrain/layers/lrn.hpp"

namespace dptrain {

Lrn::Lrn(std::string name, int size, float alpha, float beta, float k) : Layer(std::move(name)) {
  spec_.size = size;
  spec_.alpha = alpha;
  spec_.beta = beta;
  spec_.k = k;
}

Shape Lrn::setup(std::span<const Shape> inputs, Backend& backend) {
  spec_.who = who();
  check_input_count(inputs, 1);
  DPTRAIN_CHECK(inputs[0].rank() == 4, who(), ": input must be 4-D [N,C,H,W] but has shape ", inputs[0].to_string());
  spec_.input = inputs[0];
  plan_ = backend.make_lrn(spec_);
  return spec_.input;
}

void Lrn::forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) {
  check_input(*inputs[0], spec_.input, 0);
  plan_->forward(*inputs[0], output, ctx.training);
}

void Lrn::backward(std::span<const Tensor* const> inputs, const Tensor&, const Tensor& doutput,
                   std::span<Tensor* const> dinputs) {
  if (dinputs[0] != nullptr) plan_->backward(*inputs[0], doutput, *dinputs[0]);
}

}  // namespace dptrain
