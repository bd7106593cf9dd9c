#include "dptrain/layers/add.hpp"

namespace dptrain {

Shape Add::setup(std::span<const Shape> inputs, Backend& backend) {
  check_input_count(inputs, 2);
  DPTRAIN_CHECK(inputs[0] == inputs[1], who(), ": inputs have shapes ", inputs[0].to_string(), " and ",
                inputs[1].to_string(), "; they must be equal");
  shape_ = inputs[0];
  backend_ = &backend;
  return shape_;
}

void Add::forward(const PassContext&, std::span<const Tensor* const> inputs, Tensor& output) {
  check_input(*inputs[0], shape_, 0);
  check_input(*inputs[1], shape_, 1);
  check_shape(output, shape_, who(), "output");
  if (relu_) {
    backend_->add_relu(*inputs[0], *inputs[1], output);
  } else {
    backend_->add(*inputs[0], *inputs[1], output);
  }
}

void Add::backward(std::span<const Tensor* const>, const Tensor&, const Tensor& doutput,
                   std::span<Tensor* const> dinputs) {
  check_shape(doutput, shape_, who(), "output gradient");
  for (Tensor* d : dinputs) {
    if (d == nullptr) continue;
    check_shape(*d, shape_, who(), "input gradient");
    backend_->copy(doutput, *d);  // nothing to move where it is the output gradient's memory (in place)
  }
}

}  // namespace dptrain
