#include "dptrain/layers/relu.hpp"

namespace dptrain {

Shape Relu::setup(std::span<const Shape> inputs, Backend& backend) {
  check_input_count(inputs, 1);
  shape_ = inputs[0];
  plan_ = backend.make_relu(shape_, who());
  return shape_;
}

void Relu::forward(const PassContext&, std::span<const Tensor* const> inputs, Tensor& output) {
  check_input(*inputs[0], shape_, 0);
  plan_->forward(*inputs[0], output);
}

void Relu::backward(std::span<const Tensor* const>, const Tensor& output, const Tensor& doutput,
                    std::span<Tensor* const> dinputs) {
  if (dinputs[0] != nullptr) plan_->backward(output, doutput, *dinputs[0]);
}

}  // namespace dptrain
