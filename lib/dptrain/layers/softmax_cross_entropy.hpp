#pragma once
#include "dptrain/layers/layer.hpp"

namespace dptrain {

// The loss: inputs are logits [N, classes] (or [N, classes, 1, 1]) and int32 labels [N]; the output
// is the one-element batch-mean loss. Its backward pass ignores `doutput` and uses `loss_weight`
// (GoogLeNet's auxiliary classifiers weigh 0.3).
class SoftmaxCrossEntropy final : public Layer {
 public:
  SoftmaxCrossEntropy(std::string name, float label_smoothing = 0.f, float loss_weight = 1.f);
  const char* kind() const override { return "softmax_cross_entropy"; }
  Shape setup(std::span<const Shape> inputs, Backend& backend) override;
  void forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) override;
  void backward(std::span<const Tensor* const> inputs, const Tensor& output, const Tensor& doutput,
                std::span<Tensor* const> dinputs) override;
  bool backward_reads_input(std::size_t index) const override { return index == 1; }
  bool backward_reads_output() const override { return false; }
  std::size_t saved_state_bytes() const override { return static_cast<std::size_t>(spec_.logits.numel()) * 4; }

  float loss_weight() const { return loss_weight_; }
  // Multiplies the gradient the backward pass starts from (loss scaling for fp16): the forward's
  // loss is not scaled.
  void set_loss_scale(float scale) { loss_scale_ = scale; }
  // The loss of the next forwards is the mean over the batch's first `rows` samples (an evaluation's
  // short final batch is padded with repeats); negative: every sample.
  void set_counted_rows(std::int64_t rows) { counted_rows_ = rows; }
  // Softmax of the latest forward's logits, [N, classes].
  const Tensor& probabilities() const { return probabilities_; }
  // Of the latest forward's counted samples, how many have their label among the 1 and the
  // min(5, classes) most probable classes: two f32 on the backend's device (SoftmaxCrossEntropyPlan).
  const Tensor& correct() const { return correct_; }

 private:
  SoftmaxCrossEntropySpec spec_;
  Shape logits_shape_, labels_shape_;
  float loss_weight_;
  float loss_scale_ = 1.f;
  std::int64_t counted_rows_ = -1;
  std::unique_ptr<SoftmaxCrossEntropyPlan> plan_;
  Backend* backend_ = nullptr;
  Tensor probabilities_;
  Tensor correct_;
};

}  // namespace dptrain
