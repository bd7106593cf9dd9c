// Every op of the Backend interface on the CPU (oneDNN, the tested reference) and the CUDA backend,
// from the same host inputs: the results must agree to 1e-4 relative error in fp32, and the CUDA
// backend in bf16 and fp16 (activations in 16 bits, parameters f32) must agree with the CPU's fp32
// to 1e-2 norm-relative error. Activations are made with activation()/on_activation(), which are f32
// on the CPU and in the fp32 run, so that run is what it always was.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gpu/gpu_testing.hpp"
#include "gpu/op_case_agreement.hpp"
#include "support/tensor_testing.hpp"

namespace dptrain {
namespace {
// Every op of DPTRAIN_BACKEND_OPS (backend.hpp) is compared through its layer on each of its op cases
// (tests/support/op_cases.hpp), in a TEST_CASE generated from that list (below): an
// op cannot join the list without cases (the build fails to link) nor with an empty list (the test
// fails). The plan-level cases here compare further shapes and options of the older ops.

using gpu_testing::activation;
using gpu_testing::expect_agreement_in_all_precisions;
using gpu_testing::in_16_bits;
using gpu_testing::on;
using gpu_testing::on_activation;
using testing::distinct_tensor;
using testing::random_tensor;

void check_convolution(const ConvolutionSpec& spec) {
  const Shape out = convolution_output_shape(spec, spec.who), weight = convolution_weight_shape(spec);
  const Tensor x = random_tensor(spec.input, 1), w = random_tensor(weight, 2), b = random_tensor(Shape{out[1]}, 3);
  const Tensor dy = random_tensor(out, 4);
  expect_agreement_in_all_precisions(
      [&](Backend& be) {
        auto plan = be.make_convolution(spec);
        Tensor X = on_activation(be, x), W = on(be, w), B = on(be, b), DY = on_activation(be, dy);
        Tensor y = activation(be, out), dx = activation(be, spec.input), dw = be.allocate(weight);
        Tensor db = be.allocate(b.shape());
        plan->forward(X, W, B, y);
        plan->backward_data(DY, W, dx);
        plan->backward_weights(X, DY, dw, db);
        plan->forward(X, W, B, y);  // a second run, with the algorithms chosen, gives the same
        // Without a bias the plan leaves `db` alone: it is not a result (the GPU's is uninitialised).
        if (!spec.bias) return gpu_testing::to_host(be, {&y, &dx, &dw});
        return gpu_testing::to_host(be, {&y, &dx, &dw, &db});
      },
      spec.bias ? std::vector<std::string>{"output", "input gradient", "weight gradient", "bias gradient"}
                : std::vector<std::string>{"output", "input gradient", "weight gradient"});
}

TEST_CASE("convolution: CPU and GPU agree", "[gpu][convolution]") {
  ConvolutionSpec spec;
  spec.input = Shape{2, 3, 9, 9};
  spec.out_channels = 8;
  spec.window = Window2d::square(3, 2, 1);
  check_convolution(spec);
  spec.input = Shape{2, 8, 7, 7};
  spec.out_channels = 5;
  spec.window = Window2d{1, 7, 1, 1, 0, 3};  // Inception-V3's factorised 1x7
  spec.bias = false;
  check_convolution(spec);
  // A 16-bit bias gradient sums its channels in groups of samples (channel_sum_splits): 300 channels
  // of 5 samples make 4 groups of 2, 2, 1 and none.
  spec.input = Shape{5, 4, 6, 6};
  spec.out_channels = 300;
  spec.window = Window2d::square(1, 1, 0);
  spec.bias = true;
  check_convolution(spec);
}

// Where a later consumer adds its input gradient in (ConvolutionSpec::accumulate_input_gradient, cuDNN's
// beta = 1), the result is the gradient already there plus this one: the CPU, which cannot, sums a
// scratch into it as the net does there. The first call also runs cuDNN's search, which must not
// write over the gradient already there.
TEST_CASE("convolution: backward-data adds to the gradient already there where the backend can", "[gpu][convolution]") {
  ConvolutionSpec spec;
  spec.input = Shape{3, 6, 8, 8};
  spec.out_channels = 10;
  spec.window = Window2d::square(3, 1, 1);
  spec.bias = false;
  const Shape out = convolution_output_shape(spec, spec.who), weight = convolution_weight_shape(spec);
  const Tensor w = random_tensor(weight, 21), dy = random_tensor(out, 22), prior = random_tensor(spec.input, 23);
  bool accumulated = false;
  expect_agreement_in_all_precisions(
      [&](Backend& be) {
        Tensor W = on(be, w), DY = on_activation(be, dy), dx = on_activation(be, prior);
        ConvolutionSpec s = spec;
        s.accumulate_input_gradient = be.accumulates_convolution_input_gradient();
        auto plan = be.make_convolution(s);
        if (s.accumulate_input_gradient) {
          accumulated = true;
          plan->backward_data(DY, W, dx);
        } else {
          Tensor scratch = activation(be, spec.input);
          plan->backward_data(DY, W, scratch);
          be.axpby(1.f, scratch, 1.f, dx);
        }
        return gpu_testing::to_host(be, {&dx});
      },
      {"input gradient"});
  CHECK(accumulated);  // the CUDA backend did add in
}

void check_pooling(PoolingKind kind, Rounding rounding, Window2d window, Shape input) {
  PoolingSpec spec;
  spec.input = input;
  spec.kind = kind;
  spec.window = window;
  spec.rounding = rounding;
  const Shape out = pooling_output_shape(spec, spec.who);
  // Rounded to bf16 first: then bf16 and fp16 hold these very values, and max pooling sees the same
  // ties (if rounding made any) as the fp32 reference, so the gradients go to the same inputs.
  const Tensor x = in_16_bits(distinct_tensor(input, 5)), dy = random_tensor(out, 6);
  expect_agreement_in_all_precisions(
      [&](Backend& be) {
        auto plan = be.make_pooling(spec);
        Tensor X = on_activation(be, x), DY = on_activation(be, dy);
        Tensor y = activation(be, out), dx = activation(be, input);
        plan->forward(X, y, true);
        plan->backward(DY, dx);
        return gpu_testing::to_host(be, {&y, &dx});
      },
      {"output", "input gradient"});
}

TEST_CASE("pooling: CPU and GPU agree, with Caffe's ceil rounding", "[gpu][pooling]") {
  const Shape input{2, 3, 10, 10};
  for (PoolingKind kind :
       {PoolingKind::max, PoolingKind::average_include_padding, PoolingKind::average_exclude_padding}) {
    INFO("kind " << static_cast<int>(kind));
    check_pooling(kind, Rounding::ceil, Window2d::square(3, 2, 0), input);  // 10 -> 5 (ceil adds padding)
    check_pooling(kind, Rounding::ceil, Window2d::square(3, 2, 1), input);
    check_pooling(kind, Rounding::floor, Window2d::square(3, 1, 1), input);
    check_pooling(kind, Rounding::floor, Window2d::square(2, 2, 0), input);
  }
}

// Batch normalization: batch_norm_test.cpp.

TEST_CASE("relu and LRN: CPU and GPU agree", "[gpu][relu][lrn]") {
  const Shape shape{2, 7, 4, 4};
  const Tensor x = distinct_tensor(shape, 13), dy = random_tensor(shape, 14);
  LrnSpec lrn;
  lrn.input = shape;
  lrn.alpha = 0.1f;  // large enough that the normalization matters
  expect_agreement_in_all_precisions(
      [&](Backend& be) {
        auto relu = be.make_relu(shape);
        auto norm = be.make_lrn(lrn);
        Tensor X = on_activation(be, x), DY = on_activation(be, dy);
        Tensor y = activation(be, shape), dx = activation(be, shape);
        Tensor ly = activation(be, shape), ldx = activation(be, shape);
        relu->forward(X, y);
        relu->backward(y, DY, dx);
        norm->forward(X, ly, true);
        norm->backward(X, DY, ldx);
        return gpu_testing::to_host(be, {&y, &dx, &ly, &ldx});
      },
      {"relu output", "relu input gradient", "lrn output", "lrn input gradient"});
}

TEST_CASE("concat and linear: CPU and GPU agree", "[gpu][concat][linear]") {
  const std::array<Shape, 3> parts{Shape{2, 3, 4, 4}, Shape{2, 5, 4, 4}, Shape{2, 1, 4, 4}};
  const Shape joined = concat_output_shape(parts, "concat");
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < parts.size(); ++i) inputs.push_back(random_tensor(parts[i], 20 + i));
  const Tensor djoined = random_tensor(joined, 30);
  LinearSpec linear;
  linear.input = Shape{4, 3, 2, 2};
  linear.out_features = 6;
  const Shape weight = linear_weight_shape(linear), out{4, 6};
  const Tensor x = random_tensor(linear.input, 31), w = random_tensor(weight, 32), b = random_tensor(Shape{6}, 33);
  const Tensor dy = random_tensor(out, 34);
  expect_agreement_in_all_precisions(
      [&](Backend& be) {
        auto concat = be.make_concat(parts);
        std::vector<Tensor> in, din;
        std::vector<const Tensor*> in_ptr;
        std::vector<Tensor*> din_ptr;
        for (std::size_t i = 0; i < parts.size(); ++i) {
          in.push_back(on_activation(be, inputs[i]));
          din.push_back(activation(be, parts[i]));
        }
        for (std::size_t i = 0; i < parts.size(); ++i) {
          in_ptr.push_back(&in[i]);
          din_ptr.push_back(&din[i]);
        }
        Tensor y = activation(be, joined), DY = on_activation(be, djoined);
        concat->forward(in_ptr, y);
        concat->backward(DY, din_ptr);
        auto plan = be.make_linear(linear);
        Tensor X = on_activation(be, x), W = on(be, w), B = on(be, b), LDY = on_activation(be, dy);
        Tensor ly = activation(be, out), ldx = activation(be, linear.input), ldw = be.allocate(weight);
        Tensor ldb = be.allocate(b.shape());
        plan->forward(X, W, B, ly);
        plan->backward_data(LDY, W, ldx);
        plan->backward_weights(X, LDY, ldw, ldb);
        return gpu_testing::to_host(be, {&y, &din[0], &din[1], &din[2], &ly, &ldx, &ldw, &ldb});
      },
      {"concat output", "concat gradient 0", "concat gradient 1", "concat gradient 2", "linear output",
       "linear input gradient", "linear weight gradient", "linear bias gradient"});
}

TEST_CASE("softmax cross-entropy and dropout: CPU and GPU agree", "[gpu][loss][dropout]") {
  SoftmaxCrossEntropySpec loss_spec;
  loss_spec.logits = Shape{5, 11};
  loss_spec.label_smoothing = 0.1f;
  Tensor logits = random_tensor(loss_spec.logits, 40, -4.f, 4.f);
  // Ties with the label, which count against it: row 0 all equal, row 1 its first classes equal.
  std::fill_n(logits.data<float>(), 11, 0.5f);
  std::fill_n(logits.data<float>() + 11, 4, 1.25f);
  const Tensor labels = testing::random_labels(5, 11, 41);
  DropoutSpec dropout;
  dropout.input = Shape{3, 4, 5, 5};
  dropout.probability = 0.3f;
  const Tensor x = random_tensor(dropout.input, 42), dy = random_tensor(dropout.input, 43);
  const RandomPosition position{7, 12345, 100};
  expect_agreement_in_all_precisions(
      [&](Backend& be) {
        auto plan = be.make_softmax_cross_entropy(loss_spec);
        // Logits and their gradient are activations; probabilities and the loss are f32 everywhere.
        Tensor Z = on_activation(be, logits), p = be.allocate(loss_spec.logits), loss = be.allocate(Shape{1});
        Tensor dz = activation(be, loss_spec.logits), correct = be.allocate(Shape{2});
        // Labels stay on the host, as the net keeps them; the loss and the top-k counts take all rows
        // but the last (the padding of an evaluation's short batch).
        plan->forward(Z, labels, p, loss, correct, std::max<std::int64_t>(1, loss_spec.logits[0] - 1));
        plan->backward(p, labels, 0.5f, dz);
        auto drop = be.make_dropout(dropout);
        Tensor X = on_activation(be, x), DY = on_activation(be, dy), y = activation(be, dropout.input);
        Tensor dx = activation(be, dropout.input);
        drop->forward(X, y, position);
        drop->backward(DY, dx);
        return gpu_testing::to_host(be, {&p, &loss, &correct, &dz, &y, &dx});
      },
      {"probabilities", "loss", "top-1 and top-5 counts", "logits gradient", "dropout output",
       "dropout input gradient"});
}

// Every op case of support/op_cases, through the op's layer: the shapes and parameters the CPU checks
// against the reference. A TEST_CASE per op of DPTRAIN_BACKEND_OPS (generated from it) and one for add.
void expect_cases_agree(const std::vector<testing::OpCase>& cases) {
  REQUIRE_FALSE(cases.empty());  // an op's empty list would pass with nothing compared
  // Catch2 runs a section once per name: a repeated name would skip its case.
  std::set<std::string> names;
  for (const testing::OpCase& c : cases) REQUIRE(names.insert(c.name).second);
  for (const testing::OpCase& c : cases) {
    DYNAMIC_SECTION(c.name) { gpu_testing::expect_op_case_agreement(c); }
  }
}

#define DPTRAIN_OP_CASES_AGREE(name, Plan, params, args)                              \
  TEST_CASE(#name " cases: CPU and GPU layers agree", "[gpu][op_cases][" #name "]") { \
    expect_cases_agree(testing::name##_cases());                                      \
  }
DPTRAIN_BACKEND_OPS(DPTRAIN_OP_CASES_AGREE)
#undef DPTRAIN_OP_CASES_AGREE

TEST_CASE("add cases: CPU and GPU layers agree", "[gpu][op_cases][add]") { expect_cases_agree(testing::add_cases()); }

TEST_CASE("element-wise ops and the SGD update: CPU and GPU agree", "[gpu][elementwise][sgd]") {
  const Shape shape{3, 17};
  const Tensor a = random_tensor(shape, 50), b = random_tensor(shape, 51), v = random_tensor(shape, 52);
  expect_agreement_in_all_precisions(
      [&](Backend& be) {
        // fill, add, axpby and copy on activations (what the net runs them on), then on f32 parameters.
        Tensor A = on_activation(be, a), B = on_activation(be, b), sum = activation(be, shape);
        Tensor filled = activation(be, shape);
        be.fill(filled, 0.75f);
        be.add(A, B, sum);
        Tensor mixed = on_activation(be, b);
        be.axpby(0.3f, A, -1.5f, mixed);
        Tensor copied = activation(be, shape);
        be.copy(A, copied);
        Tensor PA = on(be, a), PB = on(be, b), parameter_filled = be.allocate(shape);
        be.fill(parameter_filled, -0.25f);
        Tensor parameter_mixed = on(be, b);
        be.axpby(0.3f, PA, -1.5f, parameter_mixed);
        Tensor w1 = on(be, a), v1 = on(be, v), w2 = on(be, a), v2 = on(be, v);
        const SgdTensors plain[] = {{&w1, &PB, &v1, 1e-3f}}, nesterov[] = {{&w2, &PB, &v2, 5e-4f}};
        be.sgd_update_all(plain, SgdHyper{0.1f, 0.9f, false});
        be.sgd_update_all(nesterov, SgdHyper{0.05f, 0.8f, true});
        return gpu_testing::to_host(
            be, {&filled, &sum, &mixed, &copied, &parameter_filled, &parameter_mixed, &w1, &v1, &w2, &v2});
      },
      {"fill", "add", "axpby", "copy", "parameter fill", "parameter axpby", "sgd weight", "sgd velocity",
       "nesterov weight", "nesterov velocity"});
}

}  // namespace
}  // namespace dptrain
