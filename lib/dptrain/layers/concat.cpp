#include "dptrain/layers/concat.hpp"

namespace dptrain {

Shape Concat::setup(std::span<const Shape> inputs, Backend& backend) {
  const Shape output = concat_output_shape(inputs, who());
  inputs_.assign(inputs.begin(), inputs.end());
  backend_ = &backend;
  plan_ = backend.make_concat(inputs, who());
  scratch_.clear();
  return output;
}

void Concat::forward(const PassContext&, std::span<const Tensor* const> inputs, Tensor& output) {
  DPTRAIN_CHECK(inputs.size() == inputs_.size(), who(), ": set up for ", inputs_.size(), " inputs but given ",
                inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) check_input(*inputs[i], inputs_[i], i);
  plan_->forward(inputs, output);
}

void Concat::backward(std::span<const Tensor* const>, const Tensor&, const Tensor& doutput,
                      std::span<Tensor* const> dinputs) {
  std::vector<Tensor*> targets(dinputs.begin(), dinputs.end());
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] != nullptr) continue;
    if (scratch_.size() < targets.size()) scratch_.resize(targets.size());
    if (!scratch_[i].defined() || scratch_[i].shape() != inputs_[i]) {
      scratch_[i] = backend_->allocate_activation(inputs_[i]);  // an activation gradient
    }
    targets[i] = &scratch_[i];
  }
  plan_->backward(doutput, targets);
}

}  // namespace dptrain
