// The cases of the normalization and element-wise ops (batch norm, LRN, ReLU, softmax cross-entropy,
// dropout) against support/reference_normalization.
//
// Their finite-difference checks run in fp32 against a 1e-4 bound. The check divides by the terms of
// <g, v>, the derivative along one random direction, which now and then nearly cancel; then output
// rounding alone exceeds the bound. So the gradient cases have their own shapes, input ranges, steps
// and seeds, chosen (and their margin measured) so that every check passes with at least 2x margin;
// see each comment. Change one and measure again.
#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <span>
#include <vector>

#include "dptrain/layers/batch_norm.hpp"
#include "dptrain/layers/dropout.hpp"
#include "dptrain/layers/lrn.hpp"
#include "dptrain/layers/relu.hpp"
#include "dptrain/layers/softmax_cross_entropy.hpp"
#include "support/op_cases.hpp"
#include "support/reference_normalization.hpp"
#include "support/tensor_testing.hpp"

namespace dptrain::testing {
namespace {

BatchNorm& as_batch_norm(Layer& layer) { return dynamic_cast<BatchNorm&>(layer); }

// Random scale in [0.5, 1.5) from `seed` and shift in [-shift_range, shift_range) from seed + 1.
void write_scale_and_shift(Layer& layer, Backend& backend, std::uint64_t seed, float shift_range) {
  BatchNorm& bn = as_batch_norm(layer);
  const Shape channels = bn.scale().value.shape();
  write_to(backend, random_tensor(channels, seed, 0.5f, 1.5f), bn.scale().value);
  write_to(backend, random_tensor(channels, seed + 1, -shift_range, shift_range), bn.shift().value);
  // Stale gradients, so a backward that adds to them instead of writing them fails the reference.
  backend.fill(bn.scale().grad, 1000.f);
  backend.fill(bn.shift().grad, 1000.f);
}

struct BatchNormShape {
  Shape shape;
  float epsilon;
  float momentum;
  bool fuse_relu = false;  // the layer applies a ReLU to its output (BatchNorm::fuse_relu)
  // and does its backward too (BatchNorm::fuse_relu_backward): it gets the ReLU's output gradient.
  bool fuse_relu_backward = false;
  // A residual join (BatchNormJoin::add_relu): a second input z, y = max(0, bn(x) + z).
  bool residual_join = false;
};

// Forward with the batch's statistics, the running averages it moves, and the backward.
OpCase batch_norm_training_case(const BatchNormShape& s, std::uint64_t seed) {
  OpCase c;
  c.op = "batch_norm";
  c.name = "training, " + s.shape.to_string() + ", epsilon " + std::to_string(s.epsilon) + ", momentum " +
           std::to_string(s.momentum) + (s.fuse_relu ? ", fused ReLU" : "") +
           (s.fuse_relu_backward ? " and its backward" : "") + (s.residual_join ? ", joining a residual" : "");
  c.inputs = s.residual_join ? std::vector<Shape>{s.shape, s.shape} : std::vector<Shape>{s.shape};
  c.output = s.shape;
  c.make_layer = [s] {
    return std::make_unique<BatchNorm>("bn1", s.epsilon, s.momentum,
                                       s.residual_join ? BatchNormJoin::add_relu : BatchNormJoin::none);
  };
  c.prepare = [s, seed](Layer& layer, Backend& backend) {
    if (s.fuse_relu) REQUIRE(layer.fuse_relu());
    if (s.fuse_relu_backward) {
      REQUIRE(layer.can_fuse_relu_backward());
      layer.fuse_relu_backward();
    }
    write_scale_and_shift(layer, backend, seed, 1.f);
    BatchNorm& bn = as_batch_norm(layer);
    const Shape channels = bn.running_mean().shape();
    write_to(backend, random_tensor(channels, seed + 2, -0.5f, 0.5f), bn.running_mean());
    write_to(backend, random_tensor(channels, seed + 3, 0.5f, 2.f), bn.running_variance());
  };
  // Off-centre inputs, so that a missing mean subtraction would show.
  c.make_inputs = [s, seed] {
    std::vector<Tensor> inputs{random_tensor(s.shape, seed + 4, -2.f, 3.f)};
    if (s.residual_join) inputs.push_back(random_tensor(s.shape, seed + 6, -1.f, 1.f));
    return OpInputs{std::move(inputs), random_tensor(s.shape, seed + 5)};
  };
  c.reference = [s](Layer& layer, const OpInputs& in) {
    BatchNorm& bn = as_batch_norm(layer);
    const auto x = to_double(in.inputs[0]), scale = to_double(bn.scale().value);
    auto forward = reference::batch_norm_training(x, s.shape, scale, to_double(bn.shift().value), s.epsilon);
    // A fused ReLU's backward masks the gradient by the output first (y > 0, before or after the ReLU).
    std::vector<double> dy = to_double(in.doutput);
    if (s.fuse_relu_backward) {
      for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = forward.y[i] > 0 ? dy[i] : 0;
    }
    // A residual join: y = max(0, bn(x) + z); the masked gradient is z's and the normalisation's.
    if (s.residual_join) {
      const auto z = to_double(in.inputs[1]);
      for (std::size_t i = 0; i < dy.size(); ++i) {
        forward.y[i] = std::max(0.0, forward.y[i] + z[i]);
        dy[i] = forward.y[i] > 0 ? dy[i] : 0;
      }
    }
    auto grads = reference::batch_norm_backward(x, dy, s.shape, scale, s.epsilon);
    // running = (1 - momentum) running + momentum batch, the variance unbiased by n / (n - 1).
    const double count = static_cast<double>(s.shape[0] * s.shape[2] * s.shape[3]), m = s.momentum;
    std::vector<double> mean = to_double(bn.running_mean()), variance = to_double(bn.running_variance());
    for (std::size_t i = 0; i < mean.size(); ++i) {
      mean[i] = (1 - m) * mean[i] + m * forward.mean[i];
      variance[i] = (1 - m) * variance[i] + m * forward.variance[i] * count / (count - 1);
    }
    // A fused ReLU acts on the output; unless its backward is fused too, the backward is the
    // normalisation's (in a net, the ReLU's own backward masks the gradient before it reaches the layer).
    if (s.fuse_relu) {
      for (double& y : forward.y) y = y > 0 ? y : 0;
    }
    ExpectedResults want;
    want.output = std::move(forward.y);
    want.input_gradients = {std::move(grads.dx)};
    if (s.residual_join) want.input_gradients.push_back(dy);
    want.parameter_gradients = {std::move(grads.dscale), std::move(grads.dshift)};
    want.state = {
        {"running mean", [](Layer& l) -> const Tensor& { return as_batch_norm(l).running_mean(); }, mean},
        {"running variance", [](Layer& l) -> const Tensor& { return as_batch_norm(l).running_variance(); }, variance}};
    return want;
  };
  return c;
}

// Step 2e-2 against inputs with standard deviation 1.7: h/std ~ 1e-2 balances the O(h^2) error of the
// normalization's curvature against fp32 rounding (O(1/h)). Small shifts keep |y|, and with it the
// rounding of the outputs, small. Worst errors measured: 2.7e-5, 2.7e-5, 2.8e-5.
OpCase batch_norm_gradient_case(const Shape& shape, std::uint64_t seed) {
  OpCase c;
  c.op = "batch_norm";
  c.name = "gradients of " + shape.to_string();
  c.inputs = {shape};
  c.output = shape;
  c.make_layer = [] { return std::make_unique<BatchNorm>("bn1", 1e-5f, 0.1f); };
  c.prepare = [seed](Layer& layer, Backend& backend) { write_scale_and_shift(layer, backend, seed, 0.2f); };
  c.make_inputs = [shape, seed] {
    return OpInputs{{random_tensor(shape, seed + 2, -3.f, 3.f)}, random_tensor(shape, seed + 3)};
  };
  c.gradient_step = 2e-2;
  return c;
}

struct LrnParameters {
  Shape shape;
  int size;
  float alpha, beta, k;
  float range;  // inputs uniform in [-range, range)
};

std::string describe(const LrnParameters& p) {
  return p.shape.to_string() + ", size " + std::to_string(p.size) + ", alpha " + std::to_string(p.alpha) + ", beta " +
         std::to_string(p.beta) + ", k " + std::to_string(p.k);
}

OpCase lrn_case(const LrnParameters& p, std::uint64_t seed) {
  OpCase c;
  c.op = "lrn";
  c.name = describe(p);
  c.inputs = {p.shape};
  c.output = p.shape;
  c.make_layer = [p] { return std::make_unique<Lrn>("norm1", p.size, p.alpha, p.beta, p.k); };
  c.make_inputs = [p, seed] {
    return OpInputs{{random_tensor(p.shape, seed, -p.range, p.range)}, random_tensor(p.shape, seed + 1)};
  };
  c.reference = [p](Layer&, const OpInputs& in) {
    const auto x = to_double(in.inputs[0]);
    ExpectedResults want;
    want.output = reference::lrn_forward(x, p.shape, p.size, p.alpha, p.beta, p.k);
    want.input_gradients = {reference::lrn_backward(x, to_double(in.doutput), p.shape, p.size, p.alpha, p.beta, p.k)};
    // With the large alphas the normalization is far from the identity, so the comparison has teeth;
    // k = 2 alone scales by 2^-beta.
    if (p.alpha >= 0.1f) CHECK(relative_error(in.inputs[0], want.output) > 0.05);
    return want;
  };
  return c;
}

OpCase lrn_gradient_case(const LrnParameters& p, double step, std::uint64_t seed) {
  OpCase c = lrn_case(p, seed);
  c.name = "gradients of " + describe(p);
  c.reference = nullptr;
  c.gradient_step = step;
  return c;
}

// Inputs away from the kink at 0: distinct_tensor keeps every value at least gap/4 from it.
OpCase relu_case(const Shape& shape, std::uint64_t seed, float gap) {
  OpCase c;
  c.op = "relu";
  c.name = shape.to_string();
  c.inputs = {shape};
  c.output = shape;
  c.make_layer = [] { return std::make_unique<Relu>("relu1"); };
  c.make_inputs = [shape, seed, gap] {
    return OpInputs{{distinct_tensor(shape, seed, gap)}, random_tensor(shape, seed + 1)};
  };
  c.reference = [](Layer&, const OpInputs& in) {
    const auto x = to_double(in.inputs[0]);
    ExpectedResults want;
    want.output = reference::relu_forward(x);
    want.input_gradients = {reference::relu_backward(x, to_double(in.doutput))};
    return want;
  };
  return c;
}

struct SoftmaxParameters {
  Shape logits;
  float smoothing;
  float loss_weight;
};

OpCase softmax_cross_entropy_case(const SoftmaxParameters& p, std::uint64_t seed, float logit_range) {
  const std::int64_t rows = p.logits[0], classes = p.logits[1];
  OpCase c;
  c.op = "softmax_cross_entropy";
  c.name = p.logits.to_string() + ", smoothing " + std::to_string(p.smoothing) + ", loss weight " +
           std::to_string(p.loss_weight);
  c.inputs = {p.logits, Shape{rows}};
  c.output = Shape{1};
  c.needs_grad = {true, false};  // labels take no gradient
  c.loss = true;
  c.make_layer = [p] { return std::make_unique<SoftmaxCrossEntropy>("loss", p.smoothing, p.loss_weight); };
  // The loss ignores its output gradient.
  c.make_inputs = [p, rows, classes, seed, logit_range] {
    return OpInputs{{random_tensor(p.logits, seed, -logit_range, logit_range),
                     random_labels(rows, static_cast<int>(classes), seed + 1)},
                    random_tensor(Shape{1}, seed + 2)};
  };
  c.reference = [p, rows, classes](Layer&, const OpInputs& in) {
    const Tensor& labels = in.inputs[1];
    const std::span<const std::int32_t> label_span(labels.data<std::int32_t>(), static_cast<std::size_t>(rows));
    const auto logits = to_double(in.inputs[0]);
    auto expected = reference::softmax_cross_entropy(logits, rows, classes, label_span, p.smoothing);
    ExpectedResults want;
    want.output = {expected.loss};
    want.input_gradients = {
        reference::softmax_cross_entropy_backward(logits, rows, classes, label_span, p.smoothing, p.loss_weight)};
    want.state = {{"probabilities",
                   [](Layer& l) -> const Tensor& { return dynamic_cast<SoftmaxCrossEntropy&>(l).probabilities(); },
                   std::move(expected.probabilities)}};
    return want;
  };
  return c;
}

}  // namespace

std::vector<OpCase> batch_norm_cases() {
  // Odd sizes, one sample, 1x1 spatial, a large epsilon, momentum 1.
  const BatchNormShape shapes[] = {
      {Shape{3, 5, 7, 9}, 1e-5f, 0.1f},               // odd everything
      {Shape{1, 6, 5, 3}, 1e-5f, 0.1f},               // one sample: statistics over H and W only
      {Shape{4, 3, 1, 1}, 1e-5f, 0.1f},               // 1x1 spatial (after global pooling): n/(n-1) = 4/3 matters
      {Shape{2, 8, 4, 4}, 1e-3f, 0.3f},               // epsilon large enough to show in the output
      {Shape{5, 2, 3, 1}, 1e-5f, 1.0f},               // momentum 1: the running averages become the batch's
      {Shape{3, 5, 7, 9}, 1e-5f, 0.1f, true},         // a fused ReLU, odd everything
      {Shape{2, 8, 4, 4}, 1e-3f, 0.3f, true},         // a fused ReLU on a plane of 16 (vector loads on a GPU)
      {Shape{3, 5, 7, 9}, 1e-5f, 0.1f, true, true},   // the ReLU's backward fused too
      {Shape{4, 16, 6, 6}, 1e-3f, 0.2f, true, true},  // and on 16 channels (blocked on the CPU)
      {Shape{3, 5, 7, 9}, 1e-5f, 0.1f, false, false, true},   // a residual join: max(0, bn(x) + z)
      {Shape{4, 16, 6, 6}, 1e-3f, 0.2f, false, false, true},  // and on 16 channels
  };
  std::vector<OpCase> cases;
  std::uint64_t seed = 1000;
  for (const BatchNormShape& s : shapes) cases.push_back(batch_norm_training_case(s, seed += 10));
  cases.push_back(batch_norm_gradient_case(Shape{3, 2, 5, 5}, 100));
  cases.push_back(batch_norm_gradient_case(Shape{5, 3, 3, 3}, 90));
  cases.push_back(batch_norm_gradient_case(Shape{2, 4, 3, 5}, 130));
  return cases;
}

std::vector<OpCase> lrn_cases() {
  const LrnParameters references[] = {
      {Shape{3, 5, 7, 9}, 5, 1e-4f, 0.75f, 1.f, 10.f},  // GoogLeNet's parameters
      {Shape{3, 5, 7, 9}, 3, 1e-4f, 0.75f, 1.f, 10.f},
      {Shape{2, 8, 4, 4}, 5, 0.1f, 0.75f, 1.f, 3.f},  // alpha large enough to normalize strongly
      {Shape{3, 7, 5, 3}, 3, 0.1f, 0.75f, 2.f, 3.f},  // k != 1
      {Shape{2, 3, 5, 5}, 5, 0.1f, 0.5f, 1.f, 3.f},   // window wider than the channels; beta 0.5
      {Shape{1, 1, 3, 3}, 3, 0.5f, 0.75f, 1.f, 2.f},  // one channel: the window is clipped to it
      {Shape{2, 16, 3, 2}, 5, 0.2f, 0.9f, 1.f, 2.f},
  };
  std::vector<OpCase> cases;
  std::uint64_t seed = 5001;
  for (const LrnParameters& p : references) {
    cases.push_back(lrn_case(p, seed));
    seed += 2;
  }
  // Inputs in [-2, 2] with alpha 0.1 normalize by up to ~30%; the steps balance curvature against
  // rounding. GoogLeNet's parameters are nearly linear, so a larger step is exact enough.
  // Worst errors measured: 1.5e-5, 1.9e-5, 3.6e-5, 0.5e-5, 0.7e-5.
  cases.push_back(lrn_gradient_case({Shape{2, 5, 1, 1}, 5, 0.1f, 0.75f, 1.f, 2.f}, 2e-2, 10));
  cases.push_back(lrn_gradient_case({Shape{1, 7, 1, 3}, 3, 0.1f, 0.75f, 2.f, 2.f}, 2e-2, 10));
  cases.push_back(lrn_gradient_case({Shape{1, 7, 3, 5}, 3, 0.1f, 0.75f, 2.f, 2.f}, 3e-2, 10));
  cases.push_back(lrn_gradient_case({Shape{3, 5, 3, 1}, 5, 1e-4f, 0.75f, 1.f, 1.f}, 5e-2, 10));
  cases.push_back(lrn_gradient_case({Shape{3, 5, 3, 1}, 3, 1e-4f, 0.75f, 1.f, 1.f}, 5e-2, 10));
  return cases;
}

std::vector<OpCase> relu_cases() {
  std::vector<OpCase> cases;
  std::uint64_t seed = 7001;
  for (const Shape& shape : {Shape{3, 5, 7, 9}, Shape{2, 13}, Shape{7}, Shape{4, 3, 5}, Shape{1, 1, 1, 1}}) {
    cases.push_back(relu_case(shape, seed, 0.01f));
    seed += 2;
  }
  // ReLU is linear away from 0, so a large step costs nothing: 0.1 against a gap of 0.5 never
  // crosses the kink (every input is at least 0.125 from it).
  for (const Shape& shape : {Shape{3, 5}, Shape{2, 3, 3, 3}, Shape{3, 11}}) {
    OpCase c = relu_case(shape, 40, 0.5f);
    c.name = "gradients of " + shape.to_string();
    c.reference = nullptr;
    c.gradient_step = 0.1;
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<OpCase> softmax_cross_entropy_cases() {
  const SoftmaxParameters references[] = {
      {Shape{3, 5}, 0.f, 1.f},         {Shape{8, 10}, 0.1f, 1.f},
      {Shape{1, 7}, 0.2f, 0.3f},        // one sample; an auxiliary classifier's weight
      {Shape{5, 1000}, 0.1f, 1.f},      // ImageNet's classes, Inception-V3's smoothing
      {Shape{4, 6, 1, 1}, 0.1f, 0.3f},  // logits straight from a 1x1 convolution
      {Shape{3, 9, 1, 1}, 0.f, 1.f},
  };
  std::vector<OpCase> cases;
  std::uint64_t seed = 9001;
  for (const SoftmaxParameters& p : references) {
    cases.push_back(softmax_cross_entropy_case(p, seed, 5.f));
    seed += 3;
  }
  // The output is one fp32 loss, so its rounding (~1e-7 of the loss) sets the noise; logits in
  // [-0.5, 0.5] and few rows keep the derivative large next to it, and step 1e-2 balances that
  // rounding against the curvature. Loss weight 1: the check differentiates the loss itself.
  // Worst errors measured: 0.6e-5, 0.9e-5, 1.6e-5, 0.9e-5.
  const std::pair<SoftmaxParameters, std::uint64_t> gradients[] = {
      {{Shape{3, 5}, 0.f, 1.f}, 10},
      {{Shape{4, 6, 1, 1}, 0.1f, 1.f}, 100},
      {{Shape{3, 4}, 0.1f, 1.f}, 10},
      {{Shape{2, 7}, 0.2f, 1.f}, 100},
  };
  for (const auto& [p, gradient_seed] : gradients) {
    OpCase c = softmax_cross_entropy_case(p, gradient_seed, 0.5f);
    c.name = "gradients of " + c.name;
    c.reference = nullptr;
    c.gradient_step = 1e-2;
    cases.push_back(std::move(c));
  }
  return cases;
}

// Dropout's mask is checked against the RandomPosition contract by the plan tests of
// normalization_layers_test.cpp; here only its gradient. The mask depends only on the PassContext, so
// the check's repeated forwards see the same mask, and for a fixed mask dropout is linear in x: a
// large step is exact up to rounding.
std::vector<OpCase> dropout_cases() {
  std::vector<OpCase> cases;
  std::uint64_t seed = 8600;
  for (const Shape& shape : {Shape{3, 5, 3, 3}, Shape{2, 17}}) {
    OpCase c;
    c.op = "dropout";
    c.name = "gradients of " + shape.to_string() + ", p 0.5";
    c.inputs = {shape};
    c.output = shape;
    c.context = training_pass(3, 1, 2);
    c.make_layer = [] { return std::make_unique<Dropout>("drop", 0.5f); };
    const std::uint64_t input_seed = ++seed;
    c.make_inputs = [shape, input_seed] {
      return OpInputs{{random_tensor(shape, input_seed)}, random_tensor(shape, input_seed + 100)};
    };
    c.gradient_step = 0.1;
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace dptrain::testing
