// Layer tests for the spatial layers (convolution, pooling, linear, concat, add) on the CPU backend
// that are not per-op table material. Their reference and finite-difference cases are descriptions in
// tests/support/spatial_op_cases.cpp, run by unit_layers_ops. Here:
//   1. the reference itself, pinned by small hand-computed cases, so that a reference bug cannot hide a
//      matching library bug;
//   2. properties checked without the reference (average pooling's two kinds, initial weights);
//   3. bad use: mismatched shapes throw dptrain::Error naming the layer ("<kind> '<name>'") and both
//      shapes as Shape::to_string() prints them.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <memory>
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

constexpr double kTolerance = 1e-4;

Backend& cpu() {
  static const std::unique_ptr<Backend> backend = make_cpu_backend();
  return *backend;
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
// Pooling
// ============================================================================================

TEST_CASE("average pooling's two kinds differ exactly where windows meet padding", "[layers][pooling]") {
  // A constant image makes the difference visible without a reference: excluding padding gives the
  // constant everywhere; including it scales each border window by its in-image share. 3x3/2 ceil on
  // 4x4: windows start at 0 and 2, the second hangs one column/row into the extra padding.
  const std::vector<Shape> shapes{Shape{1, 1, 4, 4}};
  Tensor ones = Tensor::empty(shapes[0]);
  cpu().fill(ones, 1.f);
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
// Initialisation
// ============================================================================================

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
