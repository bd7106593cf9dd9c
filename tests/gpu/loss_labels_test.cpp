// The loss's labels go to the device once a step: the backward of the step finds the forward's copy
// there. That reuse must follow the labels' values, not the host buffer they sit in (the net refills
// the same buffer every step), so each case below changes them in place or between forward and
// backward, and compares with the CPU backend given the same labels.
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dptrain/core/error.hpp"
#include "gpu/gpu_testing.hpp"
#include "support/tensor_testing.hpp"

namespace dptrain {
namespace {
using gpu_testing::activation;
using gpu_testing::on_activation;

void set_labels(Tensor& labels, const Tensor& values) { std::memcpy(labels.raw(), values.raw(), values.bytes()); }

// Forward with `forward_labels`, then backward with `backward_labels`, twice over (two steps, the
// second with `second_step_labels` written into the same host buffer before both passes), on `be`.
// With `late`, on a GPU, the compute stream is kept busy for 30 ms before the first forward, so that
// its copy of the labels out of page-locked memory is still queued when the host changes them.
// Returns both steps' probabilities, loss and logits gradient.
std::vector<Tensor> two_steps(Backend& be, const SoftmaxCrossEntropySpec& spec, const Tensor& logits,
                              const Tensor& forward_labels, const Tensor& backward_labels,
                              const Tensor& second_step_labels, bool late = false) {
  auto plan = be.make_softmax_cross_entropy(spec);
  std::unique_ptr<gpu_testing::ComputeDelay> delay;
  if (late && !be.device().is_cpu()) delay = std::make_unique<gpu_testing::ComputeDelay>(be);
  Tensor labels = Tensor::empty(Shape{spec.logits[0]}, DType::i32);  // one host buffer, as the net has
  Tensor z = on_activation(be, logits), p1 = be.allocate(spec.logits), loss1 = be.allocate(Shape{1});
  Tensor dz1 = activation(be, spec.logits), correct1 = be.allocate(Shape{2}), correct2 = be.allocate(Shape{2});
  set_labels(labels, forward_labels);
  if (delay) delay->queue(30);
  plan->forward(z, labels, p1, loss1, correct1, spec.logits[0]);
  set_labels(labels, backward_labels);
  plan->backward(p1, labels, 1.f, dz1);
  Tensor p2 = be.allocate(spec.logits), loss2 = be.allocate(Shape{1}), dz2 = activation(be, spec.logits);
  set_labels(labels, second_step_labels);
  plan->forward(z, labels, p2, loss2, correct2, spec.logits[0]);
  plan->backward(p2, labels, 1.f, dz2);
  return gpu_testing::to_host(be, {&p1, &loss1, &dz1, &correct1, &p2, &loss2, &dz2, &correct2});
}
}  // namespace

TEST_CASE("the loss follows its labels' values when it reuses the forward's device copy", "[gpu][loss][labels]") {
  SoftmaxCrossEntropySpec spec;
  spec.logits = Shape{37, 13};
  spec.label_smoothing = 0.05f;
  const Tensor logits = testing::random_tensor(spec.logits, 90, -3.f, 3.f);
  const Tensor a = testing::random_labels(37, 13, 91), b = testing::random_labels(37, 13, 92);
  // Differ in one sample only, the last: a reuse that compared a prefix, or the pointer, would miss it.
  Tensor a_but_last = Tensor::empty(Shape{37}, DType::i32);
  set_labels(a_but_last, a);
  a_but_last.data<std::int32_t>()[36] = (a.data<std::int32_t>()[36] + 1) % 13;
  const std::vector<std::string> names = {
      "step 1 probabilities", "step 1 loss", "step 1 logits gradient", "step 1 top-1 and top-5 counts",
      "step 2 probabilities", "step 2 loss", "step 2 logits gradient", "step 2 top-1 and top-5 counts"};
  SECTION("the same labels in forward and backward, then new ones in the same buffer") {
    gpu_testing::expect_agreement_in_all_precisions([&](Backend& be) { return two_steps(be, spec, logits, a, a, b); },
                                                    names);
  }
  SECTION("labels changed between the forward and the backward, and in their last sample only") {
    // The forward's copy is still queued behind 30 ms of GEMMs when the backward's labels arrive: a
    // backward that overwrote the page-locked labels without waiting for that copy would give the
    // forward the backward's labels (step 1's loss and probabilities would differ from the CPU's).
    gpu_testing::expect_agreement_in_all_precisions(
        [&](Backend& be) { return two_steps(be, spec, logits, a, a_but_last, a, true); }, names);
  }
  SECTION("a label out of range is refused when it arrives, after valid ones were reused") {
    auto plan = gpu_testing::gpu().make_softmax_cross_entropy(spec);
    Backend& be = gpu_testing::gpu();
    Tensor labels = Tensor::empty(Shape{37}, DType::i32);
    set_labels(labels, a);
    Tensor z = on_activation(be, logits), p = be.allocate(spec.logits), loss = be.allocate(Shape{1});
    Tensor dz = activation(be, spec.logits), correct = be.allocate(Shape{2});
    plan->forward(z, labels, p, loss, correct, 37);
    plan->backward(p, labels, 1.f, dz);
    labels.data<std::int32_t>()[20] = 13;
    CHECK_THROWS_WITH(plan->backward(p, labels, 1.f, dz), Catch::Contains("sample 20 has label 13"));
    CHECK_THROWS_WITH(plan->forward(z, labels, p, loss, correct, 37), Catch::Contains("sample 20 has label 13"));
  }
}

}  // namespace dptrain
