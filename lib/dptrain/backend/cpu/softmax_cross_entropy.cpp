// Softmax with cross-entropy against integer labels, optionally label-smoothed (Szegedy et al. 2015):
// the target is (1 - e) on the label plus e / classes everywhere. The loss is the batch mean.
#include <algorithm>
#include <cmath>

#include "dptrain/backend/cpu/plans.hpp"
#include "dptrain/core/accuracy.hpp"

namespace dptrain::cpu {
namespace {
class HostSoftmaxCrossEntropy final : public SoftmaxCrossEntropyPlan {
 public:
  explicit HostSoftmaxCrossEntropy(const SoftmaxCrossEntropySpec& spec) : spec_(spec) {
    DPTRAIN_CHECK(spec.logits.rank() == 2 && spec.logits[1] > 0, spec.who,
                  ": logits must be [N, classes] but have shape ", spec.logits.to_string());
    DPTRAIN_CHECK(spec.label_smoothing >= 0.f && spec.label_smoothing < 1.f, spec.who,
                  ": label smoothing must be in [0, 1), not ", spec.label_smoothing);
  }

  void forward(const Tensor& logits, const Tensor& labels, Tensor& probabilities, Tensor& loss, Tensor& correct,
               std::int64_t counted_rows) override {
    check_cpu_tensor(logits, spec_.logits, spec_.who, "logits");
    check_cpu_tensor(probabilities, spec_.logits, spec_.who, "probabilities");
    check_cpu_tensor(loss, Shape{1}, spec_.who, "loss");
    check_cpu_tensor(correct, Shape{2}, spec_.who, "correct counts");
    const std::int32_t* label = checked_labels(labels);
    const std::int64_t rows = spec_.logits[0], classes = spec_.logits[1];
    const std::int64_t counted = std::clamp<std::int64_t>(counted_rows, 0, rows);
    const double smooth = spec_.label_smoothing, off_target = smooth / static_cast<double>(classes);
    double total = 0;
    for (std::int64_t n = 0; n < rows; ++n) {
      const float* z = logits.data<float>() + n * classes;
      float* p = probabilities.data<float>() + n * classes;
      const float top = *std::max_element(z, z + classes);
      double sum = 0;
      for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c] - top));
      const double log_sum = std::log(sum) + top;
      double row_loss = 0;
      for (std::int64_t c = 0; c < classes; ++c) {
        const double log_p = z[c] - log_sum;
        p[c] = static_cast<float>(std::exp(log_p));
        const double target = off_target + (c == label[n] ? 1.0 - smooth : 0.0);
        if (target != 0) row_loss -= target * log_p;
      }
      if (n < counted) total += row_loss;
    }
    loss.data<float>()[0] = counted ? static_cast<float>(total / static_cast<double>(counted)) : 0.f;
    const Tensor counted_probabilities = probabilities.slice_samples(0, counted);
    const Tensor counted_labels = labels.slice_samples(0, counted);
    correct.data<float>()[0] = static_cast<float>(top_k_correct(counted_probabilities, counted_labels, 1));
    correct.data<float>()[1] = static_cast<float>(
        top_k_correct(counted_probabilities, counted_labels, static_cast<int>(std::min<std::int64_t>(5, classes))));
  }

  void backward(const Tensor& probabilities, const Tensor& labels, float loss_weight, Tensor& dlogits) override {
    check_cpu_tensor(probabilities, spec_.logits, spec_.who, "probabilities");
    check_cpu_tensor(dlogits, spec_.logits, spec_.who, "logits gradient");
    const std::int32_t* label = checked_labels(labels);
    const std::int64_t rows = spec_.logits[0], classes = spec_.logits[1];
    const float smooth = spec_.label_smoothing, off_target = smooth / static_cast<float>(classes);
    const float scale = rows ? loss_weight / static_cast<float>(rows) : 0.f;
    for (std::int64_t n = 0; n < rows; ++n) {
      const float* p = probabilities.data<float>() + n * classes;
      float* d = dlogits.data<float>() + n * classes;
      for (std::int64_t c = 0; c < classes; ++c) {
        const float target = off_target + (c == label[n] ? 1.f - smooth : 0.f);
        d[c] = scale * (p[c] - target);
      }
    }
  }

 private:
  const std::int32_t* checked_labels(const Tensor& labels) const {
    DPTRAIN_CHECK(labels.device().is_cpu() && labels.dtype() == DType::i32, spec_.who,
                  ": labels must be int32 host memory");
    check_shape(labels, Shape{spec_.logits[0]}, spec_.who, "labels");
    const std::int32_t* label = labels.data<std::int32_t>();
    for (std::int64_t n = 0; n < spec_.logits[0]; ++n) {
      DPTRAIN_CHECK(label[n] >= 0 && label[n] < spec_.logits[1], spec_.who, ": sample ", n, " has label ", label[n],
                    " but there are only ", spec_.logits[1], " classes");
    }
    return label;
  }

  SoftmaxCrossEntropySpec spec_;
};
}  // namespace

std::unique_ptr<SoftmaxCrossEntropyPlan> make_softmax_cross_entropy(DnnlContextPtr /*ctx: a host plan*/,
                                                                    const SoftmaxCrossEntropySpec& spec) {
  return std::make_unique<HostSoftmaxCrossEntropy>(spec);
}

}  // namespace dptrain::cpu
