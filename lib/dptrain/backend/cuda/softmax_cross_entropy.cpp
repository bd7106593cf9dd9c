// Softmax with label-smoothed cross-entropy on our kernels (loss_kernels.cu). The labels stay on the
// host (the net keeps them there), so they are checked there and copied to the device when they
// change: once a step, from page-locked memory (asynchronously with the host), and the backward of
// the same step finds them there already.
// Logits and their gradient are activations (bf16/fp16 in low precision); the probabilities and the
// loss stay f32 and all arithmetic is fp32 (double sums), so the loss is read as precisely as in fp32.
#include <algorithm>
#include <cstring>

#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/plans.hpp"
#include "dptrain/backend/cuda/streams.hpp"

namespace dptrain::cuda {
namespace {
class KernelSoftmaxCrossEntropy final : public SoftmaxCrossEntropyPlan {
 public:
  KernelSoftmaxCrossEntropy(CudaContextPtr ctx, const SoftmaxCrossEntropySpec& spec)
      : ctx_(std::move(ctx)),
        spec_(spec),
        pinned_labels_(std::max<std::size_t>(1, static_cast<std::size_t>(spec.logits[0]) * sizeof(std::int32_t))) {
    DPTRAIN_CHECK(spec.logits.rank() == 2 && spec.logits[1] > 0, spec.who,
                  ": logits must be [N, classes] but have shape ", spec.logits.to_string());
    DPTRAIN_CHECK(spec.label_smoothing >= 0.f && spec.label_smoothing < 1.f, spec.who,
                  ": label smoothing must be in [0, 1), not ", spec.label_smoothing);
    labels_ = ctx_->allocate(Shape{spec.logits[0]}, DType::i32);
    row_loss_ = ctx_->allocate(Shape{spec.logits[0]}, DType::f32);
    row_rank_ = ctx_->allocate(Shape{spec.logits[0]}, DType::i32);
  }
  // A copy out of the page-locked labels may still be queued: it must end before they are freed.
  ~KernelSoftmaxCrossEntropy() override { cudaEventSynchronize(labels_copied_.get()); }

  void forward(const Tensor& logits, const Tensor& labels, Tensor& probabilities, Tensor& loss, Tensor& correct,
               std::int64_t counted_rows) override {
    check_activation(*ctx_, logits, spec_.logits, spec_.who, "logits");
    check_device_tensor(*ctx_, probabilities, spec_.logits, spec_.who, "probabilities");
    check_device_tensor(*ctx_, loss, Shape{1}, spec_.who, "loss");
    check_device_tensor(*ctx_, correct, Shape{2}, spec_.who, "correct counts");
    const std::int32_t* label = device_labels(labels);
    kernels::softmax_cross_entropy_forward(logits.raw(), logits.dtype(), label, device_floats(probabilities),
                                           device_floats(row_loss_), static_cast<int*>(row_rank_.raw()),
                                           device_floats(loss), device_floats(correct), spec_.logits[0],
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
  // Labels on the device: device labels are used as they are. Host labels equal to the ones last
  // copied (the backward of the step whose forward copied them) are on the device already; others are
  // range-checked, put in page-locked memory and copied on the compute stream, so the host does not
  // wait for the copy, and the kernels after it on that stream see them.
  const std::int32_t* device_labels(const Tensor& labels) {
    DPTRAIN_CHECK(labels.dtype() == DType::i32, spec_.who, ": labels must be int32");
    check_shape(labels, Shape{spec_.logits[0]}, spec_.who, "labels");
    if (!labels.device().is_cpu()) {
      check_device_tensor(*ctx_, labels, Shape{spec_.logits[0]}, spec_.who, "labels", DType::i32);
      return static_cast<const std::int32_t*>(labels.raw());
    }
    if (labels.bytes() == 0) return static_cast<const std::int32_t*>(labels_.raw());  // an empty batch
    const std::int32_t* label = labels.data<std::int32_t>();
    // Only the device reads the page-locked copy, so the host may compare with it at any time.
    if (labels_on_device_ && std::memcmp(pinned_labels_.data(), label, labels.bytes()) == 0) {
      return static_cast<const std::int32_t*>(labels_.raw());
    }
    for (std::int64_t n = 0; n < spec_.logits[0]; ++n) {
      DPTRAIN_CHECK(label[n] >= 0 && label[n] < spec_.logits[1], spec_.who, ": sample ", n, " has label ", label[n],
                    " but there are only ", spec_.logits[1], " classes");
    }
    // The previous copy out of the page-locked buffer must be over before it is overwritten; it was
    // queued a step ago, so this wait is normally satisfied already.
    labels_copied_.synchronize();
    labels_on_device_ = false;  // until the copy below is queued (a failed one leaves nothing to reuse)
    std::memcpy(pinned_labels_.data(), label, labels.bytes());
    DPTRAIN_CUDA_CHECK(
        cudaMemcpyAsync(labels_.raw(), pinned_labels_.data(), labels.bytes(), cudaMemcpyHostToDevice, ctx_->stream()));
    labels_copied_.record(ctx_->stream());
    labels_on_device_ = true;
    return static_cast<const std::int32_t*>(labels_.raw());
  }

  CudaContextPtr ctx_;
  SoftmaxCrossEntropySpec spec_;
  Tensor labels_;               // the device copy of host labels
  PinnedBuffer pinned_labels_;  // the host labels last copied, the source of that copy
  Event labels_copied_;         // that copy's end on the compute stream
  bool labels_on_device_ = false;
  Tensor row_loss_;  // per-sample losses, averaged into the loss
  Tensor row_rank_;  // per-sample: classes scoring at least the label's probability, counted into `correct`
};
}  // namespace

std::unique_ptr<SoftmaxCrossEntropyPlan> make_softmax_cross_entropy(CudaContextPtr ctx,
                                                                    const SoftmaxCrossEntropySpec& spec) {
  return std::make_unique<KernelSoftmaxCrossEntropy>(std::move(ctx), spec);
}

}  // namespace dptrain::cuda
