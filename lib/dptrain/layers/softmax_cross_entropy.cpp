#include "dptrain/layers/softmax_cross_entropy.hpp"

namespace dptrain {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(std::string name, float label_smoothing, float loss_weight)
    : Layer(std::move(name)), loss_weight_(loss_weight) {
  spec_.label_smoothing = label_smoothing;
}

Shape SoftmaxCrossEntropy::setup(std::span<const Shape> inputs, Backend& backend) {
  spec_.who = who();
  check_input_count(inputs, 2);
  logits_shape_ = inputs[0];
  labels_shape_ = inputs[1];
  DPTRAIN_CHECK(logits_shape_.rank() >= 2 && logits_shape_.per_sample() == logits_shape_[1], who(),
                ": logits must be [N, classes] (or [N, classes, 1, 1]) but have shape ", logits_shape_.to_string());
  DPTRAIN_CHECK(labels_shape_ == Shape{logits_shape_[0]}, who(), ": labels have shape ", labels_shape_.to_string(),
                " but logits have shape ", logits_shape_.to_string(), "; one label per sample is needed");
  spec_.logits = Shape{logits_shape_[0], logits_shape_[1]};
  plan_ = backend.make_softmax_cross_entropy(spec_);
  backend_ = &backend;
  probabilities_ = Tensor();  // made by the first forward: a net built for an estimate allocates nothing
  correct_ = Tensor();
  return Shape{1};
}

void SoftmaxCrossEntropy::forward(const PassContext&, std::span<const Tensor* const> inputs, Tensor& output) {
  check_input(*inputs[0], logits_shape_, 0);
  check_input(*inputs[1], labels_shape_, 1);
  if (!probabilities_.defined() || probabilities_.numel() == 0) probabilities_ = backend_->allocate(spec_.logits);
  if (!correct_.defined()) correct_ = backend_->allocate(Shape{2});
  plan_->forward(inputs[0]->reshaped(spec_.logits), *inputs[1], probabilities_, output, correct_,
                 counted_rows_ < 0 ? spec_.logits[0] : counted_rows_);
}

void SoftmaxCrossEntropy::backward(std::span<const Tensor* const> inputs, const Tensor&, const Tensor&,
                                   std::span<Tensor* const> dinputs) {
  if (dinputs[0] == nullptr) return;
  check_shape(*dinputs[0], logits_shape_, who(), "logits gradient");
  Tensor dlogits = dinputs[0]->reshaped(spec_.logits);
  plan_->backward(probabilities_, *inputs[1], loss_weight_ * loss_scale_, dlogits);
}

}  // namespace dptrain
