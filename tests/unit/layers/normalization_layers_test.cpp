// BatchNorm, Lrn, Relu, Dropout and SoftmaxCrossEntropy on the CPU backend, the tests that are not
// per-op table material: their reference and finite-difference cases are descriptions in
// tests/support/normalization_op_cases.cpp, run by unit_layers_ops. Here: batch norm's inference mode
// and running averages over steps, ReLU in place, dropout's mask contract, label smoothing by its
// formula, and the errors that bad use must raise.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "dptrain/backend/backend.hpp"
#include "dptrain/core/philox.hpp"
#include "dptrain/layers/batch_norm.hpp"
#include "dptrain/layers/dropout.hpp"
#include "dptrain/layers/lrn.hpp"
#include "dptrain/layers/relu.hpp"
#include "dptrain/layers/softmax_cross_entropy.hpp"
#include "support/reference_normalization.hpp"
#include "support/tensor_testing.hpp"

using namespace dptrain;
namespace ref = dptrain::testing::reference;
using dptrain::testing::relative_error;
using dptrain::testing::to_double;
using dptrain::testing::training_pass;

namespace {
constexpr double kTolerance = 1e-4;  // the bound, for fp32 against a double reference
constexpr bool kInputGrad[] = {true};

Shape setup(Layer& layer, std::vector<Shape> inputs, Backend& backend) { return layer.setup(inputs, backend); }

PassContext inference() {
  PassContext ctx;
  ctx.training = false;
  return ctx;
}

// ---------------------------------------------------------------------------------------------
// BatchNorm

TEST_CASE("batch_norm inference normalizes with the running averages and keeps them", "[layers][batch_norm]") {
  const auto backend = make_cpu_backend();
  std::uint64_t seed = 2000;
  for (const Shape& shape : {Shape{3, 5, 7, 9}, Shape{2, 4, 1, 1}, Shape{1, 3, 2, 5}}) {
    CAPTURE(shape.to_string());
    const float epsilon = 1e-3f;
    BatchNorm bn("bn1", epsilon);
    setup(bn, {shape}, *backend);
    const Shape channels{shape[1]};
    const Tensor scale = testing::random_tensor(channels, ++seed, 0.5f, 1.5f);
    const Tensor shift = testing::random_tensor(channels, ++seed, -1.f, 1.f);
    const Tensor mean = testing::random_tensor(channels, ++seed, -1.f, 1.f);
    const Tensor variance = testing::random_tensor(channels, ++seed, 0.25f, 2.f);
    testing::write_to(*backend, scale, bn.scale().value);
    testing::write_to(*backend, shift, bn.shift().value);
    testing::write_to(*backend, mean, bn.running_mean());
    testing::write_to(*backend, variance, bn.running_variance());
    const Tensor x = testing::random_tensor(shape, ++seed, -2.f, 3.f);

    const Tensor y = testing::run_forward(bn, shape, std::vector<Tensor>{x}, inference());

    const auto expected = ref::batch_norm_inference(to_double(x), shape, to_double(scale), to_double(shift),
                                                    to_double(mean), to_double(variance), epsilon);
    CHECK(relative_error(y, expected) < kTolerance);
    // Not the batch's statistics: those give a clearly different output.
    const auto with_batch_stats =
        ref::batch_norm_training(to_double(x), shape, to_double(scale), to_double(shift), epsilon);
    CHECK(relative_error(y, with_batch_stats.y) > 1e-2);
    // Inference must not move the running averages.
    CHECK(relative_error(bn.running_mean(), mean) == 0.0);
    CHECK(relative_error(bn.running_variance(), variance) == 0.0);
  }
}

TEST_CASE("batch_norm running averages accumulate over steps", "[layers][batch_norm]") {
  const auto backend = make_cpu_backend();
  const Shape shape{4, 3, 2, 1};  // 8 values per channel: the unbiased factor is 8/7
  const float momentum = 0.25f;
  BatchNorm bn("bn1", 1e-5f, momentum);
  setup(bn, {shape}, *backend);
  // From the initial state (mean 0, variance 1) through three batches.
  std::vector<double> want_mean(3, 0.0), want_variance(3, 1.0);
  for (std::uint64_t step = 0; step < 3; ++step) {
    const Tensor x = testing::random_tensor(shape, 3000 + step, -1.f + static_cast<float>(step), 2.f);
    testing::run_forward(bn, shape, std::vector<Tensor>{x});
    const auto batch = ref::batch_norm_training(to_double(x), shape, {1, 1, 1}, {0, 0, 0}, 1e-5);
    for (std::size_t c = 0; c < 3; ++c) {
      want_mean[c] = (1 - momentum) * want_mean[c] + momentum * batch.mean[c];
      want_variance[c] = (1 - momentum) * want_variance[c] + momentum * batch.variance[c] * 8.0 / 7.0;
    }
  }
  CHECK(relative_error(bn.running_mean(), want_mean) < kTolerance);
  CHECK(relative_error(bn.running_variance(), want_variance) < kTolerance);
  CHECK(std::abs(want_mean[0]) > 0.1);  // the averages really moved away from their start
}

// ---------------------------------------------------------------------------------------------
// Relu

// Inputs away from the kink at 0: distinct_tensor keeps every value at least gap/4 from it.
Tensor relu_input(const Shape& shape, std::uint64_t seed, float gap) {
  return testing::distinct_tensor(shape, seed, gap);
}

TEST_CASE("relu runs in place", "[layers][relu]") {
  // The backend allows x and y to be the same memory (networks apply ReLU in place).
  const auto backend = make_cpu_backend();
  const Shape shape{2, 3, 5, 5};
  const auto plan = backend->make_relu(shape);
  const Tensor x = relu_input(shape, 7100, 0.01f);
  Tensor y = testing::copy_of(x);
  plan->forward(y, y);
  CHECK(relative_error(y, ref::relu_forward(to_double(x))) < kTolerance);
  // The backward pass reads the (overwritten) output, which is all it needs.
  const Tensor dy = testing::random_tensor(shape, 7101);
  Tensor dx = Tensor::zeros(shape);
  plan->backward(y, dy, dx);
  CHECK(relative_error(dx, ref::relu_backward(to_double(x), to_double(dy))) < kTolerance);
}

// ---------------------------------------------------------------------------------------------
// Dropout

// The fraction of elements where exactly one of a and b is zero: how much two masks differ.
double mask_difference(const Tensor& a, const Tensor& b) {
  std::int64_t differ = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) differ += (a.data<float>()[i] == 0.f) != (b.data<float>()[i] == 0.f);
  return static_cast<double>(differ) / static_cast<double>(a.numel());
}

TEST_CASE("dropout plan draws the mask of the RandomPosition contract", "[layers][dropout]") {
  // specs.hpp: element e of global sample s draws word (s * per_sample + e) of stream (seed, stream).
  const auto backend = make_cpu_backend();
  std::uint64_t seed = 8000;
  for (const Shape& shape : {Shape{3, 5, 7, 9}, Shape{5, 11}, Shape{4, 3, 2}}) {
    for (const float p : {0.5f, 0.3f}) {
      CAPTURE(shape.to_string(), p);
      const auto plan = backend->make_dropout(DropoutSpec{shape, p});
      const RandomPosition position{77, 0xABCDEFull, 6};
      const Tensor x = testing::random_tensor(shape, ++seed, 0.5f, 1.5f);
      const Tensor dy = testing::random_tensor(shape, ++seed);
      Tensor y = Tensor::zeros(shape), dx = Tensor::zeros(shape);
      plan->forward(x, y, position);
      plan->backward(dy, dx);

      const auto mask = ref::dropout_mask(shape, p, position.seed, position.stream, position.first_sample);
      std::vector<double> want_y(mask.size()), want_dx(mask.size());
      for (std::size_t i = 0; i < mask.size(); ++i) {
        want_y[i] = x.data<float>()[i] * mask[i];
        want_dx[i] = dy.data<float>()[i] * mask[i];
      }
      CHECK(relative_error(y, want_y) < kTolerance);
      CHECK(relative_error(dx, want_dx) < kTolerance);
    }
  }
}

TEST_CASE("dropout in training zeroes or scales each element, backward uses the same mask", "[layers][dropout]") {
  const auto backend = make_cpu_backend();
  std::uint64_t seed = 8100;
  for (const Shape& shape : {Shape{3, 5, 7, 9}, Shape{8, 1000}, Shape{2, 3}}) {
    for (const float p : {0.5f, 0.2f, 0.7f}) {
      CAPTURE(shape.to_string(), p);
      Dropout dropout("drop", p);
      REQUIRE(setup(dropout, {shape}, *backend) == shape);
      // No zeros among the inputs, so a zero output means a dropped element.
      const Tensor x = testing::random_tensor(shape, ++seed, 0.5f, 1.5f);
      const Tensor dy = testing::random_tensor(shape, ++seed);
      const testing::LayerRun run =
          testing::run_layer(dropout, shape, std::vector<Tensor>{x}, dy, kInputGrad, training_pass(11, 2, 0));

      const double keep_scale = 1.0 / (1.0 - p);
      std::vector<double> want_y(static_cast<std::size_t>(x.numel())), want_dx(want_y.size());
      std::int64_t kept = 0;
      bool zero_or_scaled = true;
      for (std::size_t i = 0; i < want_y.size(); ++i) {
        const double xi = x.data<float>()[i], yi = run.output.data<float>()[i];
        const bool keep = yi != 0.0;
        kept += keep;
        zero_or_scaled =
            zero_or_scaled && (!keep || std::abs(yi - xi * keep_scale) <= 1e-6 * std::abs(xi * keep_scale));
        want_y[i] = keep ? xi * keep_scale : 0.0;
        want_dx[i] = keep ? dy.data<float>()[i] * keep_scale : 0.0;
      }
      CHECK(zero_or_scaled);
      CHECK(relative_error(run.output, want_y) < kTolerance);
      CHECK(relative_error(run.dinputs[0], want_dx) < kTolerance);
      if (x.numel() >= 100) {  // a mask that keeps everything or nothing is not dropout
        CHECK(kept > 0);
        CHECK(kept < x.numel());
      }
    }
  }
}

TEST_CASE("dropout keeps close to 1 - p of a large tensor", "[layers][dropout]") {
  const auto backend = make_cpu_backend();
  const Shape shape{16, 64, 16, 16};  // 262144 elements: the kept fraction's deviation is about 0.001
  const Tensor x = testing::random_tensor(shape, 8200, 0.5f, 1.5f);
  for (const float p : {0.5f, 0.3f, 0.1f, 0.9f}) {
    CAPTURE(p);
    Dropout dropout("drop", p);
    setup(dropout, {shape}, *backend);
    const Tensor y = testing::run_forward(dropout, shape, std::vector<Tensor>{x}, training_pass(5, 0, 0));
    std::int64_t kept = 0;
    for (std::int64_t i = 0; i < y.numel(); ++i) kept += y.data<float>()[i] != 0.f;
    const double fraction = static_cast<double>(kept) / static_cast<double>(y.numel());
    CHECK(std::abs(fraction - (1.0 - p)) < 0.005);
  }
}

TEST_CASE("dropout in inference is the identity", "[layers][dropout]") {
  const auto backend = make_cpu_backend();
  const Shape shape{3, 5, 7, 9};
  Dropout dropout("drop", 0.5f);
  setup(dropout, {shape}, *backend);
  const Tensor x = testing::random_tensor(shape, 8300);
  const Tensor dy = testing::random_tensor(shape, 8301);
  const testing::LayerRun run = testing::run_layer(dropout, shape, std::vector<Tensor>{x}, dy, kInputGrad, inference());
  CHECK(relative_error(run.output, x) == 0.0);
  CHECK(relative_error(run.dinputs[0], dy) == 0.0);
  // After a training step the same layer drops again: the mode follows the latest forward.
  const testing::LayerRun trained =
      testing::run_layer(dropout, shape, std::vector<Tensor>{x}, dy, kInputGrad, training_pass(1, 0, 0));
  CHECK(relative_error(trained.output, x) > 0.5);
  CHECK(mask_difference(trained.output, trained.dinputs[0]) == 0.0);
}

TEST_CASE("dropout masks do not depend on how the batch is split across ranks", "[layers][dropout]") {
  const auto backend = make_cpu_backend();
  const Shape whole_shape{8, 3, 5, 7}, half_shape{4, 3, 5, 7};
  // The same layer name on every "rank", as in data-parallel training.
  Dropout whole("drop", 0.4f), rank0("drop", 0.4f), rank1("drop", 0.4f);
  setup(whole, {whole_shape}, *backend);
  setup(rank0, {half_shape}, *backend);
  setup(rank1, {half_shape}, *backend);
  const Tensor x = testing::random_tensor(whole_shape, 8400, 0.5f, 1.5f);
  const Tensor dy = testing::random_tensor(whole_shape, 8401);

  const auto all =
      testing::run_layer(whole, whole_shape, std::vector<Tensor>{x}, dy, kInputGrad, training_pass(42, 3, 0));
  const auto first = testing::run_layer(rank0, half_shape, std::vector<Tensor>{x.slice_samples(0, 4)},
                                        dy.slice_samples(0, 4), kInputGrad, training_pass(42, 3, 0));
  const auto second = testing::run_layer(rank1, half_shape, std::vector<Tensor>{x.slice_samples(4, 4)},
                                         dy.slice_samples(4, 4), kInputGrad, training_pass(42, 3, 4));

  const std::int64_t half = half_shape.numel();
  bool same_output = true, same_gradient = true;
  for (std::int64_t i = 0; i < whole_shape.numel(); ++i) {
    const testing::LayerRun& part = i < half ? first : second;
    const std::int64_t j = i % half;
    same_output = same_output && all.output.data<float>()[i] == part.output.data<float>()[j];
    same_gradient = same_gradient && all.dinputs[0].data<float>()[i] == part.dinputs[0].data<float>()[j];
  }
  CHECK(same_output);
  CHECK(same_gradient);
  // The two halves draw different masks (first_sample moves the draws), so the equality above is
  // not an accident of every sample sharing one mask.
  CHECK(mask_difference(first.output, second.output) > 0.3);
}

TEST_CASE("dropout masks change with the epoch, the seed and the layer, not between runs", "[layers][dropout]") {
  const auto backend = make_cpu_backend();
  const Shape shape{4, 50, 5};
  const Tensor x = testing::random_tensor(shape, 8500, 0.5f, 1.5f);
  Dropout dropout("drop", 0.4f), other("drop2", 0.4f);
  setup(dropout, {shape}, *backend);
  setup(other, {shape}, *backend);
  const std::vector<Tensor> in{x};
  const Tensor base = testing::run_forward(dropout, shape, in, training_pass(7, 1, 0));
  // 2 p (1 - p) = 0.48 of the elements differ between independent masks.
  CHECK(mask_difference(base, testing::run_forward(dropout, shape, in, training_pass(7, 1, 0))) == 0.0);
  CHECK(mask_difference(base, testing::run_forward(dropout, shape, in, training_pass(7, 2, 0))) > 0.3);
  CHECK(mask_difference(base, testing::run_forward(dropout, shape, in, training_pass(8, 1, 0))) > 0.3);
  CHECK(mask_difference(base, testing::run_forward(other, shape, in, training_pass(7, 1, 0))) > 0.3);
}

// ---------------------------------------------------------------------------------------------
// SoftmaxCrossEntropy

TEST_CASE("softmax_cross_entropy label smoothing changes the loss as its formula says", "[layers][softmax]") {
  // Equal logits make p uniform, so the loss is log(classes) whatever the smoothing; logits far
  // apart make it depend on the smoothing through the off-label targets.
  const auto backend = make_cpu_backend();
  const Shape shape{2, 4};
  Tensor logits = Tensor::zeros(shape);
  Tensor labels = Tensor::zeros(Shape{2}, DType::i32);
  labels.data<std::int32_t>()[1] = 3;
  for (const float smoothing : {0.f, 0.1f, 0.5f}) {
    SoftmaxCrossEntropy loss("loss", smoothing);
    setup(loss, {shape, Shape{2}}, *backend);
    const Tensor y = testing::run_forward(loss, Shape{1}, std::vector<Tensor>{logits, labels});
    CHECK(y.data<float>()[0] == Approx(std::log(4.0)).epsilon(1e-6));
  }
  // Logit 4 on the label, 0 elsewhere: loss = log(e^4 + 3) - (1 - e + e/4) * 4.
  Tensor confident = Tensor::zeros(shape);
  confident.data<float>()[0] = 4.f;
  confident.data<float>()[7] = 4.f;
  for (const float smoothing : {0.f, 0.1f, 0.5f}) {
    SoftmaxCrossEntropy loss("loss", smoothing);
    setup(loss, {shape, Shape{2}}, *backend);
    const Tensor y = testing::run_forward(loss, Shape{1}, std::vector<Tensor>{confident, labels});
    const double want = std::log(std::exp(4.0) + 3.0) - (1.0 - smoothing + smoothing / 4.0) * 4.0;
    CHECK(y.data<float>()[0] == Approx(want).epsilon(1e-5));
  }
}

TEST_CASE("softmax_cross_entropy counts the top-1 and top-5 correct of its counted rows", "[layers][softmax]") {
  // 7 classes, 5 rows: the label first (top-1); second (top-5 only); sixth (neither); tied with every
  // class (ties count against it: neither); and a padding row that would be top-1 but is not counted.
  const auto backend = make_cpu_backend();
  const Shape shape{5, 7};
  Tensor logits = Tensor::zeros(shape);
  Tensor labels = Tensor::zeros(Shape{5}, DType::i32);
  auto set_row = [&](std::int64_t row, std::vector<float> values, std::int32_t label) {
    std::copy(values.begin(), values.end(), logits.data<float>() + row * 7);
    labels.data<std::int32_t>()[row] = label;
  };
  set_row(0, {0, 0, 5, 1, 0, 0, 0}, 2);
  set_row(1, {3, 2, 0, 0, 0, 0, 0}, 1);
  set_row(2, {6, 5, 4, 3, 2, 1, 0}, 5);
  set_row(3, {1, 1, 1, 1, 1, 1, 1}, 4);
  set_row(4, {0, 9, 0, 0, 0, 0, 0}, 1);
  SoftmaxCrossEntropy loss("loss");
  setup(loss, {shape, Shape{5}}, *backend);
  loss.set_counted_rows(4);
  testing::run_forward(loss, Shape{1}, std::vector<Tensor>{logits, labels});
  CHECK(loss.correct().data<float>()[0] == 1.f);
  CHECK(loss.correct().data<float>()[1] == 2.f);
  loss.set_counted_rows(-1);  // all five rows
  testing::run_forward(loss, Shape{1}, std::vector<Tensor>{logits, labels});
  CHECK(loss.correct().data<float>()[0] == 2.f);
  CHECK(loss.correct().data<float>()[1] == 3.f);
  // A row whose scores are not finite is never correct.
  logits.data<float>()[4 * 7 + 3] = std::numeric_limits<float>::quiet_NaN();
  testing::run_forward(loss, Shape{1}, std::vector<Tensor>{logits, labels});
  CHECK(loss.correct().data<float>()[0] == 1.f);
  CHECK(loss.correct().data<float>()[1] == 2.f);
}

// ---------------------------------------------------------------------------------------------
// Errors: bad use names the layer (kind and name) and both shapes.

TEST_CASE("a runtime input of another shape than set up names the layer and both shapes", "[layers][errors]") {
  const auto backend = make_cpu_backend();
  const Shape set_up{2, 6, 7, 8}, other{2, 6, 7, 9};
  const Tensor wrong = Tensor::zeros(other);
  auto forward_fails = [&](Layer& layer, const char* who) {
    setup(layer, {set_up}, *backend);
    Tensor output = Tensor::zeros(set_up);
    const std::vector<const Tensor*> in{&wrong};
    CHECK_THROWS_AS(layer.forward(PassContext{}, in, output), Error);
    CHECK_THROWS_WITH(layer.forward(PassContext{}, in, output),
                      Catch::Contains(who) && Catch::Contains("[2,6,7,9]") && Catch::Contains("[2,6,7,8]"));
  };
  BatchNorm bn("bn1");
  forward_fails(bn, "batch_norm 'bn1'");
  Lrn lrn("norm1");
  forward_fails(lrn, "lrn 'norm1'");
  Relu relu("relu1");
  forward_fails(relu, "relu 'relu1'");
  Dropout dropout("drop6", 0.5f);
  forward_fails(dropout, "dropout 'drop6'");
}

TEST_CASE("an output gradient of another shape names the layer and both shapes", "[layers][errors]") {
  const auto backend = make_cpu_backend();
  const Shape set_up{2, 6, 7, 8};
  const Tensor x = testing::random_tensor(set_up, 9150);
  const Tensor wrong_doutput = Tensor::zeros(Shape{2, 6, 7, 9});
  auto backward_fails = [&](Layer& layer, const char* kind, const char* who) {
    CAPTURE(who);
    setup(layer, {set_up}, *backend);
    const std::vector<Tensor> inputs{x};
    const Tensor y = testing::run_forward(layer, set_up, inputs);
    Tensor dx = Tensor::zeros(set_up);
    const std::vector<const Tensor*> in{&x};
    const std::vector<Tensor*> din{&dx};
    CHECK_THROWS_WITH(layer.backward(in, y, wrong_doutput, din),
                      Catch::Contains(kind) && Catch::Contains("[2,6,7,9]") && Catch::Contains("[2,6,7,8]"));
    CHECK_THROWS_WITH(layer.backward(in, y, wrong_doutput, din), Catch::Contains(who));
  };
  BatchNorm bn("bn1");
  backward_fails(bn, "batch_norm", "batch_norm 'bn1'");
  Lrn lrn("norm1");
  backward_fails(lrn, "lrn", "lrn 'norm1'");
  Relu relu("relu1");
  backward_fails(relu, "relu", "relu 'relu1'");
  Dropout dropout("drop6", 0.5f);
  backward_fails(dropout, "dropout", "dropout 'drop6'");
}

TEST_CASE("batch_norm and lrn reject inputs that are not 4-D", "[layers][errors]") {
  const auto backend = make_cpu_backend();
  BatchNorm bn("bn1");
  CHECK_THROWS_AS(setup(bn, {Shape{4, 6}}, *backend), Error);
  CHECK_THROWS_WITH(setup(bn, {Shape{4, 6}}, *backend),
                    Catch::Contains("batch_norm 'bn1'") && Catch::Contains("[4,6]"));
  Lrn lrn("norm1");
  CHECK_THROWS_WITH(setup(lrn, {Shape{4, 6, 5}}, *backend),
                    Catch::Contains("lrn 'norm1'") && Catch::Contains("[4,6,5]"));
  // One value per channel gives no batch statistics: fine for inference, an error in training.
  {
    BatchNorm single("bn_single");
    const Shape one{1, 6, 1, 1};
    setup(single, {one}, *backend);
    const Tensor x = testing::random_tensor(one, 77);
    PassContext inference;
    inference.training = false;
    CHECK_NOTHROW(testing::run_forward(single, one, std::vector<Tensor>{x}, inference));
    CHECK_THROWS_WITH(testing::run_forward(single, one, std::vector<Tensor>{x}),
                      Catch::Contains("batch_norm 'bn_single'") && Catch::Contains("[1,6,1,1]") &&
                          Catch::Contains("one value per channel"));
  }
  // Two inputs where one is expected.
  CHECK_THROWS_WITH(setup(bn, {Shape{2, 6, 3, 3}, Shape{2, 6, 3, 3}}, *backend),
                    Catch::Contains("batch_norm 'bn1'") && Catch::Contains("takes 1 input(s) but was given 2"));
}

TEST_CASE("softmax_cross_entropy rejects labels that do not fit the logits", "[layers][errors][softmax]") {
  const auto backend = make_cpu_backend();
  SoftmaxCrossEntropy loss("loss3");
  // At setup: one label per sample.
  CHECK_THROWS_AS(setup(loss, {Shape{3, 5}, Shape{4}}, *backend), Error);
  CHECK_THROWS_WITH(setup(loss, {Shape{3, 5}, Shape{4}}, *backend), Catch::Contains("softmax_cross_entropy 'loss3'") &&
                                                                        Catch::Contains("[4]") &&
                                                                        Catch::Contains("[3,5]"));
  CHECK_THROWS_WITH(setup(loss, {Shape{3, 5, 2, 2}, Shape{3}}, *backend),
                    Catch::Contains("softmax_cross_entropy 'loss3'") && Catch::Contains("[3,5,2,2]"));

  // At run time: tensors of other shapes than set up.
  setup(loss, {Shape{3, 5}, Shape{3}}, *backend);
  const Tensor logits = testing::random_tensor(Shape{3, 5}, 9200);
  const Tensor wrong_logits = testing::random_tensor(Shape{3, 6}, 9201);
  const Tensor labels = testing::random_labels(3, 5, 9202);
  const Tensor wrong_labels = testing::random_labels(4, 5, 9203);
  Tensor output = Tensor::zeros(Shape{1});
  const std::vector<const Tensor*> bad_labels{&logits, &wrong_labels};
  CHECK_THROWS_WITH(loss.forward(PassContext{}, bad_labels, output), Catch::Contains("softmax_cross_entropy 'loss3'") &&
                                                                         Catch::Contains("[4]") &&
                                                                         Catch::Contains("[3]"));
  const std::vector<const Tensor*> bad_logits{&wrong_logits, &labels};
  CHECK_THROWS_WITH(loss.forward(PassContext{}, bad_logits, output), Catch::Contains("softmax_cross_entropy 'loss3'") &&
                                                                         Catch::Contains("[3,6]") &&
                                                                         Catch::Contains("[3,5]"));
}

TEST_CASE("softmax_cross_entropy rejects a logits gradient of another shape", "[layers][errors][softmax]") {
  const auto backend = make_cpu_backend();
  SoftmaxCrossEntropy loss("loss3");
  setup(loss, {Shape{3, 5}, Shape{3}}, *backend);
  const Tensor logits = testing::random_tensor(Shape{3, 5}, 9250);
  const Tensor labels = testing::random_labels(3, 5, 9251);
  const std::vector<Tensor> inputs{logits, labels};
  const Tensor y = testing::run_forward(loss, Shape{1}, inputs);
  const std::vector<const Tensor*> in{&logits, &labels};
  // Same element count, other shape: must not be accepted as if it were [3,5].
  Tensor transposed = Tensor::zeros(Shape{5, 3});
  const std::vector<Tensor*> din{&transposed, nullptr};
  CHECK_THROWS_WITH(loss.backward(in, y, y, din), Catch::Contains("softmax_cross_entropy 'loss3'") &&
                                                      Catch::Contains("[5,3]") && Catch::Contains("[3,5]"));
  Tensor wider = Tensor::zeros(Shape{3, 6});
  const std::vector<Tensor*> din_wider{&wider, nullptr};
  CHECK_THROWS_WITH(loss.backward(in, y, y, din_wider), Catch::Contains("softmax_cross_entropy 'loss3'") &&
                                                            Catch::Contains("[3,6]") && Catch::Contains("[3,5]"));
}

TEST_CASE("softmax_cross_entropy names the sample and the label that is out of range", "[layers][errors][softmax]") {
  const auto backend = make_cpu_backend();
  SoftmaxCrossEntropy loss("loss3");
  setup(loss, {Shape{3, 5}, Shape{3}}, *backend);
  const Tensor logits = testing::random_tensor(Shape{3, 5}, 9300);
  Tensor labels = Tensor::zeros(Shape{3}, DType::i32);
  labels.data<std::int32_t>()[0] = 4;  // the largest valid label passes
  labels.data<std::int32_t>()[2] = 7;
  Tensor output = Tensor::zeros(Shape{1});
  const std::vector<const Tensor*> in{&logits, &labels};
  CHECK_THROWS_AS(loss.forward(PassContext{}, in, output), Error);
  CHECK_THROWS_WITH(loss.forward(PassContext{}, in, output),
                    Catch::Contains("softmax_cross_entropy 'loss3'") && Catch::Contains("sample 2") &&
                        Catch::Contains("label 7") && Catch::Contains("5 classes"));
  labels.data<std::int32_t>()[2] = -1;
  CHECK_THROWS_WITH(loss.forward(PassContext{}, in, output),
                    Catch::Contains("sample 2") && Catch::Contains("label -1"));
  labels.data<std::int32_t>()[2] = 0;
  CHECK_NOTHROW(loss.forward(PassContext{}, in, output));
  CHECK(std::isfinite(output.data<float>()[0]));
  CHECK(output.data<float>()[0] > 0.f);
}

TEST_CASE("layers reject bad hyper-parameters by name", "[layers][errors]") {
  CHECK_THROWS_WITH(Dropout("drop6", 1.f), Catch::Contains("dropout 'drop6'") && Catch::Contains("probability"));
  CHECK_THROWS_WITH(Dropout("drop6", -0.1f), Catch::Contains("dropout 'drop6'"));
  CHECK_THROWS_WITH(BatchNorm("bn1", 1e-5f, 0.f), Catch::Contains("batch_norm 'bn1'") && Catch::Contains("momentum"));
}

}  // namespace
