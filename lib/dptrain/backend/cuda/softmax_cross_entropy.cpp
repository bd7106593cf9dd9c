// Softmax with label-smoothed cross-entropy on our kernels (loss_kernels.cu). The labels stay on the
// host (the net keeps them there), so they are checked there and copied to the device each forward.
// Logits and their gradient are activations (bf16/fp16 in low precision); the probabilities and the
// loss stay f32 and all arithmetic is fp32 (double sums), so the loss is read as precisely as in fp32.
#include <algorithm>

#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/plans.hpp"

namespace dptrain::cuda {
namespace {
class KernelSoftmaxCrossEntropy final : public SoftmaxCrossEntropyPlan {
 public:
  KernelSoftmaxCrossEntropy(CudaContextPtr ctx, const SoftmaxCrossEntropySpec& spec)
      : ctx_(std::move(ctx)), spec_(spec) {
    DPTRAIN_CHECK(spec.logits.rank() == 2 && spec.logits[1] > 0, spec.who,
                  ": logits must be [N, classes] but have shape ", spec.logits.to_string());
    DPTRAIN_CHECK(spec.label_smoothing >= 0.f && spec.label_smoothing < 1.f, spec.who,
                  ": label smoothing must be in [0, 1), not ", spec.label_smoothing);
    labels_ = ctx_->allocate(Shape{spec.logits[0]}, DType::i32);
    row_loss_ = ctx_->allocate(Shape{spec.logits[0]}, DType::f32);
  }

  void forward(const Tensor& logits, const Tensor& labels, Tensor& probabilities, Tensor& loss,
               std::int64_t counted_rows) override {
    check_activation(*ctx_, logits, spec_.logits, spec_.who, "logits");
    check_device_tensor(*ctx_, probabilities, spec_.logits, spec_.who, "probabilities");
    check_device_tensor(*ctx_, loss, Shape{1}, spec_.who, "loss");
    const std::int32_t* label = device_labels(labels);
    kernels::softmax_cross_entropy_forward(logits.raw(), logits.dtype(), label, device_floats(probabilities),
                                           device_floats(row_loss_), device_floats(loss), spec_.logits[0],
                                           std::clamp<std::int64_t>(counted_rows, 0, spec_.logits[0]), spec_.logits[1],
                                           spec_.label_smoothing, ctx_->stream());
  }

  void backward(const Tensor& probabilities, const Tensor& labels, float loss_weight, Tensor& dlogits) override {
    check_device_tensor(*ctx_, probabilities, spec_.logits, spec_.who, "probabilities");
    check_activation(*ctx_, dlogits, spec_.logits, spec_.who, "logits gradient");
    const std::int64_t rows = spec_.logits[0];
    const float scale = rows ? loss_weight / static_cast<float>(rows) : 0.f;
    kernels::softmax_cross_entropy_backward(device_floats(probabilities), device_labels(labels), dlogits.raw(),
                                            dlogits.dtype(), rows, spec_.logits[1], spec_.label_smoothing, scale,
                                            ctx_->stream());
  }

 private:
  // Labels on the device: host labels are range-checked and copied (the copy of a pageable buffer
  // returns once the data is staged, so the caller may reuse it); device labels are used as they are.
  const std::int32_t* device_labels(const Tensor& labels) {
    DPTRAIN_CHECK(labels.dtype() == DType::i32, spec_.who, ": labels must be int32");
    check_shape(labels, Shape{spec_.logits[0]}, spec_.who, "labels");
    if (!labels.device().is_cpu()) {
      check_device_tensor(*ctx_, labels, Shape{spec_.logits[0]}, spec_.who, "labels", DType::i32);
      return static_cast<const std::int32_t*>(labels.raw());
    }
    const std::int32_t* label = labels.data<std::int32_t>();
    for (std::int64_t n = 0; n < spec_.logits[0]; ++n) {
      DPTRAIN_CHECK(label[n] >= 0 && label[n] < spec_.logits[1], spec_.who, ": sample ", n, " has label ", label[n],
                    " but there are only ", spec_.logits[1], " classes");
    }
    DPTRAIN_CUDA_CHECK(cudaMemcpyAsync(labels_.raw(), label, labels.bytes(), cudaMemcpyHostToDevice, ctx_->stream()));
    return static_cast<const std::int32_t*>(labels_.raw());
  }

  CudaContextPtr ctx_;
  SoftmaxCrossEntropySpec spec_;
  Tensor labels_;    // the device copy of host labels
  Tensor row_loss_;  // per-sample losses, averaged into the loss
};
}  // namespace

std::unique_ptr<SoftmaxCrossEntropyPlan> make_softmax_cross_entropy(CudaContextPtr ctx,
                                                                    const SoftmaxCrossEntropySpec& spec) {
  return std::make_unique<KernelSoftmaxCrossEntropy>(std::move(ctx), spec);
}

}  // namespace dptrain::cuda
