// Layer tests for the spatial layers (convolution, pooling, linear, concat, add) on the CPU backend.
// Every layer is checked three ways:
//   1. forward, input gradients and parameter gradients against the naive double-precision reference
//      in support/reference_spatial (relative error < 1e-4 in fp32);
//   2. a finite-difference check of the backward pass (testing::finite_difference_error < 1e-4);
//   3. bad use: mismatched shapes throw dptrain::Error naming the layer ("<kind> '<name>'") and both
//      shapes as Shape::to_string() prints them.
// The reference itself is pinned by small hand-computed cases first, so that a reference bug cannot
// hide a matching library bug.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dptrain/backend/backend.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/layers/add.hpp"
#include "dptrain/layers/concat.hpp"
#include "dptrain/layers/convolution.hpp"
#include "dptrain/layers/linear.hpp"
#include "dptrain/layers/pooling.hpp"
#include "support/reference_spatial.hpp"
#include "support/tensor_testing.hpp"

using namespace dptrain;
namespace ref = dptrain::testing::reference;
using Catch::Contains;

namespace {

constexpr double kTolerance = 1e-4;  // the bound, for reference and finite-difference checks

// The finite-difference step for every layer here but max pooling. These layers are linear in each of
// their inputs and parameters taken alone (convolution and linear are bilinear in input and weight,
// and the helper nudges one tensor at a time), so central differences have no truncation error at any
// step and only fp32 rounding is left (of the nudged inputs and of the outputs), which shrinks as
// 1/step. At the helper's default step of 1e-3 that noise alone is about 5e-4 relative for a 3x3
// convolution (over 150 random shapes, 149 were above 1e-4); at 0.5 the median is 2e-6 and the worst
// 7e-5, and the check is the same: a wrong gradient is wrong at any step.
constexpr double kLinearStep = 0.5;

Backend& cpu() {
  static const std::unique_ptr<Backend> backend = make_cpu_backend();
  return *backend;
}

void copy_into(const Tensor& from, Tensor& to) {
  REQUIRE(from.shape() == to.shape());
  std::copy_n(from.data<float>(), from.numel(), to.data<float>());
}

void fill(Tensor& t, float value) { std::fill_n(t.data<float>(), t.numel(), value); }

// Random parameter values; the gradients get a stale value so a backward that accumulates into
// (instead of writing) p.grad shows up as a mismatch with the reference.
void randomize_parameters(Layer& layer, std::uint64_t seed) {
  std::uint64_t k = 0;
  for (Parameter& p : layer.parameters()) {
    copy_into(testing::random_tensor(p.value.shape(), seed + k++), p.value);
    fill(p.grad, 1000.f);
  }
}

// Checks one result against its reference. Run with -s to see the measured errors in the expansion.
void check_close(const std::string& what, const Tensor& actual, const std::vector<double>& expected) {
  INFO(what);
  const double error = testing::relative_error(actual, expected);
  CHECK(error < kTolerance);
}

// The layer contract says backward writes (not adds) the input gradients; run_layer hands it zeroed
// tensors, which cannot tell the two apart. Runs backward again into stale tensors and expects the
// gradients run_layer got. Call it right after run_layer: max pooling's backward needs the forward's
// workspace.
void check_backward_overwrites(Layer& layer, std::span<const Tensor> inputs, const testing::LayerRun& run,
                               const Tensor& doutput) {
  std::vector<const Tensor*> in;
  std::vector<Tensor> stale(inputs.size());
  std::vector<Tensor*> din;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    in.push_back(&inputs[i]);
    if (run.dinputs[i].defined()) {
      stale[i] = Tensor::empty(inputs[i].shape());
      fill(stale[i], 1000.f);
    }
    din.push_back(run.dinputs[i].defined() ? &stale[i] : nullptr);
  }
  layer.backward(in, run.output, doutput, din);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!run.dinputs[i].defined()) continue;
    INFO("input gradient " << i << " written over a stale tensor");
    CHECK(testing::relative_error(stale[i], run.dinputs[i]) < kTolerance);
  }
}

}  // namespace

// ============================================================================================
// The reference against hand-computed values
// ============================================================================================

TEST_CASE("spatial reference: hand-computed convolution", "[layers][reference][convolution]") {
  // x = 1..9 in a 3x3 image; weight [[1,0],[0,-1]], so each output is x(top-left) - x(bottom-right)
  // of its window, with zeros for padding.
  const std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8, 9}, w{1, 0, 0, -1}, b{0.5};
  ConvolutionSpec spec{Shape{1, 1, 3, 3}, 1, Window2d::square(2), true};
  CHECK(ref::convolution_forward(spec, x, w, b) == std::vector<double>{-3.5, -3.5, -3.5, -3.5});
  // Stride 2, pad 1: windows start at -1 and 1 in both axes.
  spec.window = Window2d::square(2, 2, 1);
  CHECK(ref::convolution_output(spec) == Shape{1, 1, 2, 2});
  CHECK(ref::convolution_forward(spec, x, w, b) == std::vector<double>{-0.5, -2.5, -6.5, -3.5});
  // Backward data with dy = [1,0,0,0]: only the first window, whose in-image position (0,0) met -1.
  CHECK(ref::convolution_backward_data(spec, {1, 0, 0, 0}, w) == std::vector<double>{-1, 0, 0, 0, 0, 0, 0, 0, 0});
  // Backward weights with dy = 1 everywhere.
  const auto g = ref::convolution_backward_weights(spec, x, {1, 1, 1, 1});
  // Weight (kh, kw) meets x(2 oh - 1 + kh, 2 ow - 1 + kw): (1,1) alone, (1,0)+(1,2), (0,1)+(2,1), the corners.
  CHECK(g.weight == std::vector<double>{5, 10, 10, 20});
  CHECK(g.bias == std::vector<double>{4});
}

TEST_CASE("spatial reference: hand-computed pooling with ceil rounding", "[layers][reference][pooling]") {
  // 2x2/2 over 1..9 in a 3x3 image with ceil rounding: 2x2 outputs, one extra padded row and column.
  const std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
  PoolingSpec spec{Shape{1, 1, 3, 3}, PoolingKind::max, Window2d::square(2, 2), Rounding::ceil};
  CHECK(ref::pooling_output(spec) == Shape{1, 1, 2, 2});
  CHECK(ref::pooling_forward(spec, x) == std::vector<double>{5, 6, 8, 9});
  CHECK(ref::pooling_backward(spec, x, {1, 2, 3, 4}) == std::vector<double>{0, 0, 0, 0, 1, 2, 0, 3, 4});
  // Include-padding divides by 4 even where the window hangs into the extra padding (as oneDNN does).
  spec.kind = PoolingKind::average_include_padding;
  CHECK(ref::pooling_forward(spec, x) == std::vector<double>{3, 2.25, 3.75, 2.25});
  CHECK(ref::pooling_backward(spec, x, {1, 1, 1, 1}) == std::vector<double>(9, 0.25));
  // Exclude-padding divides by the in-image count: 4, 2, 2 and 1.
  spec.kind = PoolingKind::average_exclude_padding;
  CHECK(ref::pooling_forward(spec, x) == std::vector<double>{3, 4.5, 7.5, 9});
  CHECK(ref::pooling_backward(spec, x, {1, 1, 1, 1}) ==
        std::vector<double>{0.25, 0.25, 0.5, 0.25, 0.25, 0.5, 0.5, 0.5, 1});
}

TEST_CASE("spatial reference: hand-computed linear, concat and add", "[layers][reference]") {
  const LinearSpec spec{Shape{1, 2}, 3, true};
  const std::vector<double> w{1, 1, 2, -1, 0, 3};  // [out = 3, in = 2]
  CHECK(ref::linear_forward(spec, {1, 2}, w, {0, 1, 2}) == std::vector<double>{3, 1, 8});
  CHECK(ref::linear_backward_data(spec, {1, 0, 1}, w) == std::vector<double>{1, 4});
  const auto g = ref::linear_backward_weights(spec, {1, 2}, {1, 0, -1});
  CHECK(g.weight == std::vector<double>{1, 2, 0, 0, -1, -2});
  CHECK(g.bias == std::vector<double>{1, 0, -1});

  // Two samples: each sample's channels of input 0 come before those of input 1.
  const std::vector<Shape> shapes{Shape{2, 1, 1, 1}, Shape{2, 2, 1, 1}};
  CHECK(ref::concat_forward(shapes, {{1, 2}, {3, 4, 5, 6}}) == std::vector<double>{1, 3, 4, 2, 5, 6});
  const auto split = ref::concat_backward(shapes, {1, 3, 4, 2, 5, 6});
  CHECK(split == std::vector<std::vector<double>>{{1, 2}, {3, 4, 5, 6}});

  CHECK(ref::add_forward({1, 2.5}, {-3, 4}) == std::vector<double>{-2, 6.5});
}

// ============================================================================================
// Convolution
// ============================================================================================

namespace {
struct ConvolutionCase {
  const char* name;
  Shape input;
  int out_channels;
  Window2d window;  // kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w
  bool bias;
  Shape output;  // worked out by hand, independent of window_output_size
};

const std::vector<ConvolutionCase> kConvolutionCases{
    {"3x3 stride 1 pad 1, odd 7x9 image, 3 -> 5 channels", Shape{2, 3, 7, 9}, 5, Window2d::square(3, 1, 1), true,
     Shape{2, 5, 7, 9}},
    {"3x3 stride 2 pad 0, odd 9x7 image, 5 -> 3 channels", Shape{2, 5, 9, 7}, 3, Window2d::square(3, 2, 0), true,
     Shape{2, 3, 4, 3}},
    {"5x5 stride 2 pad 3, no bias", Shape{1, 3, 11, 8}, 4, Window2d::square(5, 2, 3), false, Shape{1, 4, 7, 5}},
    {"1x7 pad 0x3 (Inception-V3)", Shape{2, 4, 7, 9}, 3, Window2d{1, 7, 1, 1, 0, 3}, true, Shape{2, 3, 7, 9}},
    {"7x1 stride 2 pad 3x0, no bias", Shape{2, 3, 9, 7}, 5, Window2d{7, 1, 2, 2, 3, 0}, false, Shape{2, 5, 5, 4}},
    {"7x7 stride 2 pad 3 (GoogLeNet conv1 on an odd image)", Shape{1, 3, 15, 13}, 4, Window2d::square(7, 2, 3), true,
     Shape{1, 4, 8, 7}},
    {"1x1, 6 -> 4 channels", Shape{3, 6, 5, 5}, 4, Window2d::square(1), true, Shape{3, 4, 5, 5}},
    {"3x2 kernel, strides 2x3, pad 1x0", Shape{2, 3, 8, 10}, 4, Window2d{3, 2, 2, 3, 1, 0}, true, Shape{2, 4, 4, 3}},
};
}  // namespace

TEST_CASE("convolution matches the double-precision reference and finite differences", "[layers][convolution]") {
  std::uint64_t seed = 1000;
  for (const ConvolutionCase& c : kConvolutionCases) {
    seed += 10;
    DYNAMIC_SECTION(c.name) {
      Convolution layer("conv", c.out_channels, c.window, c.bias);
      const std::vector<Shape> shapes{c.input};
      const Shape out = layer.setup(shapes, cpu());
      REQUIRE(out == c.output);
      const ConvolutionSpec spec{c.input, c.out_channels, c.window, c.bias};
      REQUIRE(ref::convolution_output(spec) == c.output);
      REQUIRE(layer.parameters().size() == (c.bias ? 2u : 1u));
      CHECK(layer.weight().value.shape() == Shape{c.out_channels, c.input[1], c.window.kernel_h, c.window.kernel_w});

      randomize_parameters(layer, seed);
      const std::vector<Tensor> x{testing::random_tensor(c.input, seed + 1)};
      const Tensor dy = testing::random_tensor(out, seed + 2);
      const std::array<bool, 1> needs{true};
      const testing::LayerRun run = testing::run_layer(layer, out, x, dy, needs);

      const auto xd = testing::to_double(x[0]), dyd = testing::to_double(dy);
      const auto wd = testing::to_double(layer.weight().value);
      const auto bd = c.bias ? testing::to_double(layer.bias().value) : std::vector<double>{};
      check_close("output", run.output, ref::convolution_forward(spec, xd, wd, bd));
      check_close("input gradient", run.dinputs[0], ref::convolution_backward_data(spec, dyd, wd));
      const auto grads = ref::convolution_backward_weights(spec, xd, dyd);
      check_close("weight gradient", layer.weight().grad, grads.weight);
      if (c.bias) check_close("bias gradient", layer.bias().grad, grads.bias);
      check_backward_overwrites(layer, x, run, dy);

      const double fd = testing::finite_difference_error(layer, out, x, needs, {}, kLinearStep);
      CHECK(fd < kTolerance);
    }
  }
}

TEST_CASE("convolution without an input gradient still computes the weight gradients", "[layers][convolution]") {
  // The network's first layer gets a null input gradient (the images need none).
  Convolution layer("conv1", 4, Window2d::square(3, 2, 1));
  const std::vector<Shape> shapes{Shape{2, 3, 9, 9}};
  const Shape out = layer.setup(shapes, cpu());
  randomize_parameters(layer, 7);
  const std::vector<Tensor> x{testing::random_tensor(shapes[0], 8)};
  const Tensor dy = testing::random_tensor(out, 9);
  const std::array<bool, 1> needs{false};
  const testing::LayerRun run = testing::run_layer(layer, out, x, dy, needs);
  CHECK_FALSE(run.dinputs[0].defined());
  const ConvolutionSpec spec{shapes[0], 4, Window2d::square(3, 2, 1), true};
  const auto grads = ref::convolution_backward_weights(spec, testing::to_double(x[0]), testing::to_double(dy));
  check_close("weight gradient", layer.weight().grad, grads.weight);
  check_close("bias gradient", layer.bias().grad, grads.bias);
  CHECK(testing::finite_difference_error(layer, out, x, needs, {}, kLinearStep) < kTolerance);
}

// ============================================================================================
// Pooling
// ============================================================================================

namespace {
struct PoolingCase {
  const char* name;
  Shape input;
  Window2d window;
  Rounding rounding;
  Shape output;  // by hand; with ceil rounding also the extra padding noted in the name
};

// Max pooling is linear only while no nudge reorders a window, so its finite-difference check keeps
// the helper's default step (1e-3: two inputs can approach each other by 2e-3) and uses distinct
// inputs kGap apart. Distinct values reach +-kGap * numel / 2, and the fp32 rounding of the nudged
// inputs grows with that magnitude while the step cannot, so the noise grows with numel: about
// 4e-6 relative (median) for 63 values, with a heavy tail where a random direction nearly cancels the
// derivative. So max pooling's check runs on one image of one channel (same window, rounding and
// extra padding) and not above kMaxFdElements values: the 112x112 case is checked against the
// reference only, and the 6x8 ceil case covers the same window and extra padding.
constexpr float kGap = 0.0025f;
constexpr std::int64_t kMaxFdElements = 128;

const std::vector<PoolingCase> kPoolingCases{
    {"3x3/2 ceil, 112 -> 56 (GoogLeNet pool1, extra pad 1)", Shape{1, 2, 112, 112}, Window2d::square(3, 2),
     Rounding::ceil, Shape{1, 2, 56, 56}},
    {"3x3/2 floor, odd 7x9", Shape{2, 3, 7, 9}, Window2d::square(3, 2), Rounding::floor, Shape{2, 3, 3, 4}},
    {"3x3/2 ceil, 6x8 (floor would give 2x3; extra pad 1x1)", Shape{2, 3, 6, 8}, Window2d::square(3, 2), Rounding::ceil,
     Shape{2, 3, 3, 4}},
    {"3x3/1 pad 1 (inception pool branch), odd 7x9", Shape{1, 5, 7, 9}, Window2d::square(3, 1, 1), Rounding::floor,
     Shape{1, 5, 7, 9}},
    {"3x3/2 pad 1 ceil, 8x9 (extra pad 1 in h only)", Shape{2, 3, 8, 9}, Window2d::square(3, 2, 1), Rounding::ceil,
     Shape{2, 3, 5, 5}},
    {"2x2/2 pad 1 ceil, 5x6 (Caffe drops a window starting in the padding)", Shape{1, 3, 5, 6},
     Window2d::square(2, 2, 1), Rounding::ceil, Shape{1, 3, 3, 4}},
    {"2x3 kernel, strides 1x2, pad 0x1, ceil (extra pad 1 in w)", Shape{2, 2, 7, 10}, Window2d{2, 3, 1, 2, 0, 1},
     Rounding::ceil, Shape{2, 2, 6, 6}},
    {"5x5/3 ceil, 9x7 (floor would give 2x1; extra pad 2x1)", Shape{2, 2, 9, 7}, Window2d::square(5, 3), Rounding::ceil,
     Shape{2, 2, 3, 2}},
    {"7x7 global (GoogLeNet's last pooling)", Shape{2, 4, 7, 7}, Window2d::square(7), Rounding::floor,
     Shape{2, 4, 1, 1}},
};

const char* name_of(PoolingKind kind) {
  switch (kind) {
    case PoolingKind::max: return "max";
    case PoolingKind::average_include_padding: return "average including padding";
    case PoolingKind::average_exclude_padding: return "average excluding padding";
  }
  return "?";
}
}  // namespace

TEST_CASE("pooling matches the double-precision reference and finite differences", "[layers][pooling]") {
  std::uint64_t seed = 2000;
  for (const PoolingKind kind :
       {PoolingKind::max, PoolingKind::average_include_padding, PoolingKind::average_exclude_padding}) {
    for (const PoolingCase& c : kPoolingCases) {
      seed += 10;
      DYNAMIC_SECTION(name_of(kind) << ", " << c.name) {
        Pooling layer("pool", kind, c.window, c.rounding);
        const std::vector<Shape> shapes{c.input};
        const Shape out = layer.setup(shapes, cpu());
        REQUIRE(out == c.output);
        const PoolingSpec spec{c.input, kind, c.window, c.rounding};
        REQUIRE(ref::pooling_output(spec) == c.output);

        const bool is_max = kind == PoolingKind::max;
        const std::vector<Tensor> x{is_max ? testing::distinct_tensor(c.input, seed + 1, kGap)
                                           : testing::random_tensor(c.input, seed + 1)};
        const Tensor dy = testing::random_tensor(out, seed + 2);
        const std::array<bool, 1> needs{true};
        const testing::LayerRun run = testing::run_layer(layer, out, x, dy, needs);

        const auto xd = testing::to_double(x[0]);
        check_close("output", run.output, ref::pooling_forward(spec, xd));
        check_close("input gradient", run.dinputs[0], ref::pooling_backward(spec, xd, testing::to_double(dy)));
        check_backward_overwrites(layer, x, run, dy);

        if (!is_max) {
          const double fd = testing::finite_difference_error(layer, out, x, needs, {}, kLinearStep);
          CHECK(fd < kTolerance);
        } else if (c.input[2] * c.input[3] <= kMaxFdElements) {
          const Shape small{1, 1, c.input[2], c.input[3]};
          Pooling one("pool", kind, c.window, c.rounding);
          const std::vector<Shape> small_shapes{small};
          const Shape small_out = one.setup(small_shapes, cpu());
          const std::vector<Tensor> small_x{testing::distinct_tensor(small, seed + 3, kGap)};
          const double fd = testing::finite_difference_error(one, small_out, small_x, needs);
          CHECK(fd < kTolerance);
        }
      }
    }
  }
}

TEST_CASE("average pooling's two kinds differ exactly where windows meet padding", "[layers][pooling]") {
  // A constant image makes the difference visible without a reference: excluding padding gives the
  // constant everywhere; including it scales each border window by its in-image share. 3x3/2 ceil on
  // 4x4: windows start at 0 and 2, the second hangs one column/row into the extra padding.
  const std::vector<Shape> shapes{Shape{1, 1, 4, 4}};
  Tensor ones = Tensor::empty(shapes[0]);
  fill(ones, 1.f);
  const std::vector<Tensor> x{ones};
  Pooling include("pool", PoolingKind::average_include_padding, Window2d::square(3, 2), Rounding::ceil);
  Pooling exclude("pool", PoolingKind::average_exclude_padding, Window2d::square(3, 2), Rounding::ceil);
  const Shape out = include.setup(shapes, cpu());
  REQUIRE(out == Shape{1, 1, 2, 2});
  REQUIRE(exclude.setup(shapes, cpu()) == out);
  const Tensor yi = testing::run_forward(include, out, x), ye = testing::run_forward(exclude, out, x);
  CHECK(testing::relative_error(yi, std::vector<double>{1, 6.0 / 9, 6.0 / 9, 4.0 / 9}) < kTolerance);
  CHECK(testing::relative_error(ye, std::vector<double>{1, 1, 1, 1}) < kTolerance);
}

// ============================================================================================
// Linear
// ============================================================================================

namespace {
struct LinearCase {
  const char* name;
  Shape input;
  int out_features;
  bool bias;
};

const std::vector<LinearCase> kLinearCases{
    {"2-D input, 10 -> 7", Shape{4, 10}, 7, true},
    {"4-D input flattened per sample, 5x3x3 -> 6", Shape{3, 5, 3, 3}, 6, true},
    {"4-D odd 3x7x9 input, no bias", Shape{2, 3, 7, 9}, 5, false},
    {"2-D input, 17 -> 1, no bias", Shape{5, 17}, 1, false},
};
}  // namespace

TEST_CASE("linear matches the double-precision reference and finite differences", "[layers][linear]") {
  std::uint64_t seed = 3000;
  for (const LinearCase& c : kLinearCases) {
    seed += 10;
    DYNAMIC_SECTION(c.name) {
      Linear layer("fc", c.out_features, c.bias);
      const std::vector<Shape> shapes{c.input};
      const Shape out = layer.setup(shapes, cpu());
      REQUIRE(out == Shape{c.input[0], c.out_features});
      REQUIRE(layer.parameters().size() == (c.bias ? 2u : 1u));
      CHECK(layer.weight().value.shape() == Shape{c.out_features, c.input.per_sample()});
      const LinearSpec spec{c.input, c.out_features, c.bias};

      randomize_parameters(layer, seed);
      const std::vector<Tensor> x{testing::random_tensor(c.input, seed + 1)};
      const Tensor dy = testing::random_tensor(out, seed + 2);
      const std::array<bool, 1> needs{true};
      const testing::LayerRun run = testing::run_layer(layer, out, x, dy, needs);

      const auto xd = testing::to_double(x[0]), dyd = testing::to_double(dy);
      const auto wd = testing::to_double(layer.weight().value);
      const auto bd = c.bias ? testing::to_double(layer.bias().value) : std::vector<double>{};
      check_close("output", run.output, ref::linear_forward(spec, xd, wd, bd));
      REQUIRE(run.dinputs[0].shape() == c.input);  // the gradient keeps the input's (4-D) shape
      check_close("input gradient", run.dinputs[0], ref::linear_backward_data(spec, dyd, wd));
      const auto grads = ref::linear_backward_weights(spec, xd, dyd);
      check_close("weight gradient", layer.weight().grad, grads.weight);
      if (c.bias) check_close("bias gradient", layer.bias().grad, grads.bias);
      check_backward_overwrites(layer, x, run, dy);

      const double fd = testing::finite_difference_error(layer, out, x, needs, {}, kLinearStep);
      CHECK(fd < kTolerance);
    }
  }
}

// ============================================================================================
// Concat
// ============================================================================================

namespace {
struct ConcatCase {
  const char* name;
  std::vector<Shape> inputs;
  std::vector<bool> needs_grad;
  Shape output;
};

const std::vector<ConcatCase> kConcatCases{
    {"three inputs, 3 + 5 + 2 channels, odd 7x9",
     {Shape{2, 3, 7, 9}, Shape{2, 5, 7, 9}, Shape{2, 2, 7, 9}},
     {true, true, true},
     Shape{2, 10, 7, 9}},
    {"three inputs, the middle one needs no gradient",
     {Shape{2, 3, 5, 3}, Shape{2, 1, 5, 3}, Shape{2, 4, 5, 3}},
     {true, false, true},
     Shape{2, 8, 5, 3}},
    {"2-D inputs (features)", {Shape{3, 4}, Shape{3, 1}}, {true, true}, Shape{3, 5}},
    {"a single input", {Shape{2, 5, 3, 3}}, {true}, Shape{2, 5, 3, 3}},
};
}  // namespace

// The weight initialisations a model picks (WeightInit): He's Gaussian with variance 2 / fan-in, and
// Caffe's "xavier" (LeNet, GoogLeNet, AlexNet, which have no batch norm) uniform in +-sqrt(3 / fan-in),
// variance 1 / fan-in; biases start at 0. 480,000 draws: the sample variance is within 1%.
TEST_CASE("linear and convolution weights start with their initialisation's variance", "[layers][init]") {
  struct Moments {
    double mean = 0, variance = 0, largest = 0;
  };
  auto moments = [](const Tensor& t) {
    Moments m;
    const float* v = t.data<float>();
    for (std::int64_t i = 0; i < t.numel(); ++i) m.mean += v[i] / static_cast<double>(t.numel());
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      m.variance += (v[i] - m.mean) * (v[i] - m.mean) / static_cast<double>(t.numel());
      m.largest = std::max(m.largest, std::abs(static_cast<double>(v[i])));
    }
    return m;
  };
  const std::int64_t fan_in = 800;
  const std::vector<Shape> flat{Shape{2, fan_in}};
  Linear he("he", 600, true, WeightInit::he_normal), xavier("xavier", 600, true, WeightInit::xavier_uniform);
  he.setup(flat, cpu());
  xavier.setup(flat, cpu());
  he.initialize(5);
  xavier.initialize(5);
  const Moments h = moments(he.weight().value), x = moments(xavier.weight().value);
  CHECK(std::abs(h.mean) < 1e-3);
  CHECK(h.variance == Approx(2.0 / fan_in).epsilon(0.01));
  CHECK(std::abs(x.mean) < 1e-3);
  CHECK(x.variance == Approx(1.0 / fan_in).epsilon(0.01));
  CHECK(x.largest <= std::sqrt(3.0 / fan_in));
  CHECK(moments(xavier.bias().value).largest == 0.0);
  // A convolution's fan-in is its input channels times its window.
  Convolution conv("conv", 200, Window2d::square(5), true, WeightInit::xavier_uniform);
  const std::vector<Shape> images{Shape{1, 32, 12, 12}};
  conv.setup(images, cpu());
  conv.initialize(5);
  const Moments c = moments(conv.weight().value);
  CHECK(c.variance == Approx(1.0 / (32 * 5 * 5)).epsilon(0.01));
  CHECK(c.largest <= std::sqrt(3.0 / (32 * 5 * 5)));
}

TEST_CASE("concat matches the double-precision reference and finite differences", "[layers][concat]") {
  std::uint64_t seed = 4000;
  for (const ConcatCase& c : kConcatCases) {
    seed += 10;
    DYNAMIC_SECTION(c.name) {
      Concat layer("mixed");
      const Shape out = layer.setup(c.inputs, cpu());
      REQUIRE(out == c.output);

      std::vector<Tensor> x;
      std::vector<std::vector<double>> xd;
      for (std::size_t i = 0; i < c.inputs.size(); ++i) {
        x.push_back(testing::random_tensor(c.inputs[i], seed + i));
        xd.push_back(testing::to_double(x.back()));
      }
      const Tensor dy = testing::random_tensor(out, seed + 9);
      std::array<bool, 3> needs{};
      REQUIRE(c.needs_grad.size() == c.inputs.size());
      REQUIRE(c.inputs.size() <= needs.size());
      std::copy(c.needs_grad.begin(), c.needs_grad.end(), needs.begin());
      const std::span<const bool> mask(needs.data(), c.inputs.size());
      const testing::LayerRun run = testing::run_layer(layer, out, x, dy, mask);

      check_close("output", run.output, ref::concat_forward(c.inputs, xd));
      const auto dx = ref::concat_backward(c.inputs, testing::to_double(dy));
      for (std::size_t i = 0; i < c.inputs.size(); ++i) {
        if (!mask[i]) {
          CHECK_FALSE(run.dinputs[i].defined());
          continue;
        }
        check_close("input gradient " + std::to_string(i), run.dinputs[i], dx[i]);
      }
      check_backward_overwrites(layer, x, run, dy);

      const double fd = testing::finite_difference_error(layer, out, x, mask, {}, kLinearStep);
      CHECK(fd < kTolerance);
    }
  }
}

// ============================================================================================
// Add
// ============================================================================================

TEST_CASE("add matches the double-precision reference and finite differences", "[layers][add]") {
  struct AddCase {
    const char* name;
    Shape shape;
    std::array<bool, 2> needs;
  };
  const std::vector<AddCase> cases{
      {"odd 3x7x9 images", Shape{2, 3, 7, 9}, {true, true}},
      {"2-D, only the second input needs a gradient", Shape{4, 5}, {false, true}},
  };
  std::uint64_t seed = 5000;
  for (const AddCase& c : cases) {
    seed += 10;
    DYNAMIC_SECTION(c.name) {
      Add layer("shortcut");
      const std::vector<Shape> shapes{c.shape, c.shape};
      const Shape out = layer.setup(shapes, cpu());
      REQUIRE(out == c.shape);
      const std::vector<Tensor> x{testing::random_tensor(c.shape, seed), testing::random_tensor(c.shape, seed + 1)};
      const Tensor dy = testing::random_tensor(out, seed + 2);
      const testing::LayerRun run = testing::run_layer(layer, out, x, dy, c.needs);

      check_close("output", run.output, ref::add_forward(testing::to_double(x[0]), testing::to_double(x[1])));
      for (std::size_t i = 0; i < 2; ++i) {
        if (!c.needs[i]) {
          CHECK_FALSE(run.dinputs[i].defined());
          continue;
        }
        check_close("input gradient " + std::to_string(i), run.dinputs[i], testing::to_double(dy));
      }
      check_backward_overwrites(layer, x, run, dy);
      const double fd = testing::finite_difference_error(layer, out, x, c.needs, {}, kLinearStep);
      CHECK(fd < kTolerance);
    }
  }
}

// ============================================================================================
// Bad use: errors name the layer and both shapes
// ============================================================================================

TEST_CASE("setup rejects mismatched shapes, naming the layer and the shapes", "[layers][errors]") {
  SECTION("concat inputs that disagree outside the channels") {
    Concat layer("mixed");
    const std::vector<Shape> two{Shape{2, 4, 8, 8}, Shape{2, 6, 7, 8}};
    CHECK_THROWS_AS(layer.setup(two, cpu()), Error);
    CHECK_THROWS_WITH(layer.setup(two, cpu()), Contains("concat 'mixed'") && Contains("input 1 has shape [2,6,7,8]") &&
                                                   Contains("input 0 has shape [2,4,8,8]"));
    // The third of three, in the batch axis.
    const std::vector<Shape> three{Shape{2, 3, 7, 9}, Shape{2, 5, 7, 9}, Shape{4, 2, 7, 9}};
    CHECK_THROWS_WITH(layer.setup(three, cpu()),
                      Contains("concat 'mixed'") && Contains("input 2 has shape [4,2,7,9]") && Contains("[2,3,7,9]"));
  }
  SECTION("add inputs of different shapes") {
    Add layer("shortcut");
    const std::vector<Shape> shapes{Shape{2, 3, 7, 9}, Shape{2, 3, 9, 7}};
    CHECK_THROWS_AS(layer.setup(shapes, cpu()), Error);
    CHECK_THROWS_WITH(layer.setup(shapes, cpu()),
                      Contains("add 'shortcut'") && Contains("[2,3,7,9]") && Contains("[2,3,9,7]"));
  }
  SECTION("add given one input") {
    Add layer("shortcut");
    const std::vector<Shape> one{Shape{2, 3, 7, 9}};
    CHECK_THROWS_WITH(layer.setup(one, cpu()), Contains("add 'shortcut'") && Contains("takes 2 input(s)"));
  }
  SECTION("a convolution window larger than the padded input") {
    Convolution layer("conv1", 8, Window2d::square(7));
    const std::vector<Shape> shapes{Shape{1, 3, 4, 4}};
    CHECK_THROWS_AS(layer.setup(shapes, cpu()), Error);
    CHECK_THROWS_WITH(layer.setup(shapes, cpu()),
                      Contains("convolution 'conv1'") && Contains("7x7 window") && Contains("[1,3,4,4]"));
    // Non-square: 1x7 fits only with its 0x3 padding.
    Convolution narrow("mixed_6b/1x7", 4, Window2d{1, 7, 1, 1, 0, 0});
    const std::vector<Shape> thin{Shape{1, 3, 7, 5}};
    CHECK_THROWS_WITH(narrow.setup(thin, cpu()),
                      Contains("convolution 'mixed_6b/1x7'") && Contains("1x7 window") && Contains("[1,3,7,5]"));
    Convolution padded("mixed_6b/1x7", 4, Window2d{1, 7, 1, 1, 0, 3});
    CHECK(padded.setup(thin, cpu()) == Shape{1, 4, 7, 5});
  }
  SECTION("a pooling window larger than the input") {
    Pooling layer("pool5", PoolingKind::average_exclude_padding, Window2d::square(7));
    const std::vector<Shape> shapes{Shape{2, 4, 5, 5}};
    CHECK_THROWS_WITH(layer.setup(shapes, cpu()),
                      Contains("pooling 'pool5'") && Contains("7x7 window") && Contains("[2,4,5,5]"));
  }
  SECTION("a linear layer on a 1-D input") {
    Linear layer("fc", 10);
    const std::vector<Shape> shapes{Shape{5}};
    CHECK_THROWS_WITH(layer.setup(shapes, cpu()), Contains("linear 'fc'") && Contains("[5]"));
  }
}

TEST_CASE("forward rejects a tensor of another shape than the one set up", "[layers][errors]") {
  // The wrong tensors keep the element count ([2,3,9,7] vs [2,3,7,9]), so a check on sizes alone
  // would let them through and compute garbage.
  const Shape good{2, 3, 7, 9}, bad{2, 3, 9, 7};
  const PassContext ctx;
  const Tensor x_good = testing::random_tensor(good, 1), x_bad = testing::random_tensor(bad, 2);
  // What check_input must say about input `index`.
  const auto given = [](std::size_t index, const Shape& shape) {
    return "input " + std::to_string(index) + " has shape " + shape.to_string();
  };
  const auto expected = [](const Shape& shape) { return "but the layer was set up for " + shape.to_string(); };

  SECTION("convolution") {
    Convolution layer("conv2", 4, Window2d::square(3, 1, 1));
    const std::vector<Shape> shapes{good};
    Tensor y = Tensor::zeros(layer.setup(shapes, cpu()));
    const std::array<const Tensor*, 1> in{&x_bad};
    CHECK_THROWS_AS(layer.forward(ctx, in, y), Error);
    CHECK_THROWS_WITH(layer.forward(ctx, in, y),
                      Contains("convolution 'conv2'") && Contains(given(0, bad)) && Contains(expected(good)));
    // Backward reads the input too (for the weight gradient) and checks it the same way.
    Tensor dx = Tensor::zeros(bad);
    const std::array<Tensor*, 1> din{&dx};
    CHECK_THROWS_WITH(layer.backward(in, y, y, din),
                      Contains("convolution 'conv2'") && Contains(given(0, bad)) && Contains(expected(good)));
  }
  SECTION("pooling") {
    Pooling layer("pool1", PoolingKind::max, Window2d::square(3, 2), Rounding::ceil);
    const std::vector<Shape> shapes{good};
    Tensor y = Tensor::zeros(layer.setup(shapes, cpu()));
    const std::array<const Tensor*, 1> in{&x_bad};
    CHECK_THROWS_WITH(layer.forward(ctx, in, y),
                      Contains("pooling 'pool1'") && Contains(given(0, bad)) && Contains(expected(good)));
  }
  SECTION("linear") {
    Linear layer("fc", 6);
    const std::vector<Shape> shapes{good};
    Tensor y = Tensor::zeros(layer.setup(shapes, cpu()));
    const std::array<const Tensor*, 1> in{&x_bad};
    CHECK_THROWS_WITH(layer.forward(ctx, in, y),
                      Contains("linear 'fc'") && Contains(given(0, bad)) && Contains(expected(good)));
    Tensor dx = Tensor::zeros(bad);
    const std::array<Tensor*, 1> din{&dx};
    CHECK_THROWS_WITH(layer.backward(in, y, y, din),
                      Contains("linear 'fc'") && Contains(given(0, bad)) && Contains(expected(good)));
  }
  SECTION("concat") {
    Concat layer("mixed");
    const Shape other{2, 5, 7, 9}, other_bad{2, 5, 9, 7};
    const std::vector<Shape> shapes{good, other};
    Tensor y = Tensor::zeros(layer.setup(shapes, cpu()));
    const Tensor second_bad = testing::random_tensor(other_bad, 3);
    const std::array<const Tensor*, 2> in{&x_good, &second_bad};
    CHECK_THROWS_WITH(layer.forward(ctx, in, y),
                      Contains("concat 'mixed'") && Contains(given(1, other_bad)) && Contains(expected(other)));
    const std::array<const Tensor*, 1> too_few{&x_good};
    CHECK_THROWS_WITH(layer.forward(ctx, too_few, y),
                      Contains("concat 'mixed'") && Contains("set up for 2 inputs but given 1"));
  }
  SECTION("add") {
    Add layer("shortcut");
    const std::vector<Shape> shapes{good, good};
    Tensor y = Tensor::zeros(layer.setup(shapes, cpu()));
    const std::array<const Tensor*, 2> in{&x_good, &x_bad};
    CHECK_THROWS_WITH(layer.forward(ctx, in, y),
                      Contains("add 'shortcut'") && Contains(given(1, bad)) && Contains(expected(good)));
  }
}

TEST_CASE("backward rejects an output gradient of another shape", "[layers][errors]") {
  // The backend plans check the gradients; their messages give both shapes and the op. (They name
  // the op kind only, not the layer: "convolution: output gradient has shape ...".)
  const Shape input{2, 3, 7, 9};
  const std::vector<Shape> shapes{input};
  const Tensor x = testing::random_tensor(input, 4);
  Tensor dx = Tensor::zeros(input);
  const std::array<const Tensor*, 1> in{&x};
  const std::array<Tensor*, 1> din{&dx};

  SECTION("convolution") {
    Convolution layer("conv2", 4, Window2d::square(3, 1, 1));
    const Shape out = layer.setup(shapes, cpu());
    const Tensor dy_bad = Tensor::zeros(Shape{2, 4, 9, 7});
    CHECK_THROWS_WITH(layer.backward(in, dy_bad, dy_bad, din),
                      Contains("convolution") && Contains("[2,4,9,7]") && Contains(out.to_string()));
  }
  SECTION("pooling") {
    Pooling layer("pool1", PoolingKind::max, Window2d::square(3, 2), Rounding::ceil);
    const Shape out = layer.setup(shapes, cpu());
    REQUIRE(out == Shape{2, 3, 3, 4});
    Tensor y = Tensor::zeros(out);
    layer.forward(PassContext{}, in, y);
    const Tensor dy_bad = Tensor::zeros(Shape{2, 3, 4, 3});
    CHECK_THROWS_WITH(layer.backward(in, y, dy_bad, din),
                      Contains("pooling") && Contains("[2,3,4,3]") && Contains("[2,3,3,4]"));
  }
}
