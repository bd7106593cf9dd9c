// The cases of the spatial ops (convolution, pooling, linear, concat, add) against
// support/reference_spatial. The shapes are odd on purpose (7x9 images, non-square kernels, ceil
// rounding's extra padding) so that blocked layouts and JIT kernels meet their edges.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "dptrain/layers/add.hpp"
#include "dptrain/layers/concat.hpp"
#include "dptrain/layers/convolution.hpp"
#include "dptrain/layers/linear.hpp"
#include "dptrain/layers/pooling.hpp"
#include "support/op_cases.hpp"
#include "support/reference_spatial.hpp"
#include "support/tensor_testing.hpp"

namespace dptrain::testing {
namespace {

// The finite-difference step for every op here but max pooling. These ops are linear in each of
// their inputs and parameters taken alone (convolution and linear are bilinear in input and weight,
// and the check nudges one tensor at a time), so central differences have no truncation error at any
// step and only fp32 rounding is left (of the nudged inputs and of the outputs), which shrinks as
// 1/step. At the helper's default step of 1e-3 that noise alone is about 5e-4 relative for a 3x3
// convolution (over 150 random shapes, 149 were above 1e-4); at 0.5 the median is 2e-6 and the worst
// 7e-5, and the check is the same: a wrong gradient is wrong at any step.
constexpr double kLinearStep = 0.5;

// Checks the parameters a convolution or linear layer made (a weight, and a bias where asked), then
// gives them random values.
void prepare_weighted(Layer& layer, Backend& backend, const Shape& weight, bool bias, std::uint64_t seed) {
  REQUIRE(layer.parameters().size() == (bias ? 2u : 1u));
  CHECK(layer.parameters()[0].value.shape() == weight);
  randomize_parameters(layer, backend, seed);
}

// Convolution and linear: a weight, an optional bias (spec.bias), and the reference's forward,
// backward-data and backward-weights functions of the same form.
template <typename Spec, typename Forward, typename BackwardData, typename BackwardWeights>
ExpectedResults weighted_reference(const Spec& spec, Layer& layer, const OpInputs& in, Forward forward,
                                   BackwardData backward_data, BackwardWeights backward_weights) {
  const auto x = to_double(in.inputs[0]), dy = to_double(in.doutput);
  const auto parameters = parameter_values(layer);
  const auto& weight = parameters[0];
  const auto bias = spec.bias ? parameters[1] : std::vector<double>{};
  ExpectedResults want;
  want.output = forward(spec, x, weight, bias);
  want.input_gradients = {backward_data(spec, dy, weight)};
  auto grads = backward_weights(spec, x, dy);
  want.parameter_gradients = {std::move(grads.weight)};
  if (spec.bias) want.parameter_gradients.push_back(std::move(grads.bias));
  return want;
}

struct ConvolutionShape {
  const char* name;
  Shape input;
  int out_channels;
  Window2d window;  // kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w
  bool bias;
  Shape output;  // worked out by hand, independent of window_output_size
};

OpCase convolution_case(const ConvolutionShape& s, std::uint64_t seed, bool input_gradient = true) {
  const ConvolutionSpec spec{s.input, s.out_channels, s.window, s.bias};
  OpCase c;
  c.op = "convolution";
  c.name = s.name;
  c.inputs = {s.input};
  c.output = s.output;
  c.needs_grad = {input_gradient};
  c.make_layer = [s] { return std::make_unique<Convolution>("conv", s.out_channels, s.window, s.bias); };
  const Shape weight{s.out_channels, s.input[1], s.window.kernel_h, s.window.kernel_w};
  c.prepare = [s, spec, weight, seed](Layer& layer, Backend& backend) {
    REQUIRE(reference::convolution_output(spec) == s.output);
    prepare_weighted(layer, backend, weight, s.bias, seed);
  };
  c.make_inputs = [inputs = c.inputs, out = c.output, seed] { return random_op_inputs(inputs, out, seed); };
  c.reference = [spec](Layer& layer, const OpInputs& in) {
    return weighted_reference(spec, layer, in, reference::convolution_forward, reference::convolution_backward_data,
                              reference::convolution_backward_weights);
  };
  c.gradient_step = kLinearStep;
  return c;
}

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
constexpr double kMaxPoolingStep = 1e-3;

struct PoolingShape {
  const char* name;
  Shape input;
  Window2d window;
  Rounding rounding;
  Shape output;  // by hand; with ceil rounding also the extra padding noted in the name
};

const char* name_of(PoolingKind kind) {
  switch (kind) {
    case PoolingKind::max: return "max";
    case PoolingKind::average_include_padding: return "average including padding";
    case PoolingKind::average_exclude_padding: return "average excluding padding";
  }
  return "?";
}

OpCase pooling_case(PoolingKind kind, const PoolingShape& s, std::uint64_t seed) {
  const PoolingSpec spec{s.input, kind, s.window, s.rounding};
  const bool is_max = kind == PoolingKind::max;
  OpCase c;
  c.op = "pooling";
  c.name = std::string(name_of(kind)) + ", " + s.name;
  c.inputs = {s.input};
  c.output = s.output;
  c.make_layer = [kind, s] { return std::make_unique<Pooling>("pool", kind, s.window, s.rounding); };
  c.prepare = [spec, s](Layer&, Backend&) { REQUIRE(reference::pooling_output(spec) == s.output); };
  c.make_inputs = [is_max, s, seed] {
    if (!is_max) return random_op_inputs(std::vector<Shape>{s.input}, s.output, seed);
    return OpInputs{{distinct_tensor(s.input, seed + 1, kGap)}, random_tensor(s.output, seed + 2)};
  };
  c.reference = [spec](Layer&, const OpInputs& in) {
    const auto x = to_double(in.inputs[0]);
    ExpectedResults want;
    want.output = reference::pooling_forward(spec, x);
    want.input_gradients = {reference::pooling_backward(spec, x, to_double(in.doutput))};
    return want;
  };
  if (!is_max) c.gradient_step = kLinearStep;
  return c;
}

// Max pooling's gradient check, on one image of one channel of `s`.
OpCase max_pooling_gradient_case(const PoolingShape& s, std::uint64_t seed) {
  const Shape small{1, 1, s.input[2], s.input[3]};
  OpCase c;
  c.op = "pooling";
  c.name = std::string("max, ") + s.name + ", one channel";
  c.inputs = {small};
  c.output = Shape{1, 1, s.output[2], s.output[3]};
  c.make_layer = [s] { return std::make_unique<Pooling>("pool", PoolingKind::max, s.window, s.rounding); };
  c.make_inputs = [small, out = c.output, seed] {
    return OpInputs{{distinct_tensor(small, seed + 3, kGap)}, random_tensor(out, seed + 2)};
  };
  c.gradient_step = kMaxPoolingStep;
  return c;
}

struct LinearShape {
  const char* name;
  Shape input;
  int out_features;
  bool bias;
};

OpCase linear_case(const LinearShape& s, std::uint64_t seed) {
  const LinearSpec spec{s.input, s.out_features, s.bias};
  OpCase c;
  c.op = "linear";
  c.name = s.name;
  c.inputs = {s.input};
  c.output = Shape{s.input[0], s.out_features};
  c.make_layer = [s] { return std::make_unique<Linear>("fc", s.out_features, s.bias); };
  c.prepare = [s, seed](Layer& layer, Backend& backend) {
    prepare_weighted(layer, backend, Shape{s.out_features, s.input.per_sample()}, s.bias, seed);
  };
  c.make_inputs = [inputs = c.inputs, out = c.output, seed] { return random_op_inputs(inputs, out, seed); };
  c.reference = [spec](Layer& layer, const OpInputs& in) {
    return weighted_reference(spec, layer, in, reference::linear_forward, reference::linear_backward_data,
                              reference::linear_backward_weights);
  };
  c.gradient_step = kLinearStep;
  return c;
}

// Inputs from seed + i and the output gradient from seed + 9.
OpInputs concat_inputs(const std::vector<Shape>& shapes, const Shape& output, std::uint64_t seed) {
  OpInputs in;
  for (std::size_t i = 0; i < shapes.size(); ++i) in.inputs.push_back(random_tensor(shapes[i], seed + i));
  in.doutput = random_tensor(output, seed + 9);
  return in;
}

OpCase concat_case(const char* name, std::vector<Shape> inputs, std::vector<bool> needs_grad, Shape output,
                   std::uint64_t seed) {
  OpCase c;
  c.op = "concat";
  c.name = name;
  c.inputs = std::move(inputs);
  c.output = std::move(output);
  c.needs_grad = std::move(needs_grad);
  c.make_layer = [] { return std::make_unique<Concat>("mixed"); };
  c.make_inputs = [inputs = c.inputs, out = c.output, seed] { return concat_inputs(inputs, out, seed); };
  c.reference = [shapes = c.inputs](Layer&, const OpInputs& in) {
    std::vector<std::vector<double>> x;
    for (const Tensor& t : in.inputs) x.push_back(to_double(t));
    ExpectedResults want;
    want.output = reference::concat_forward(shapes, x);
    want.input_gradients = reference::concat_backward(shapes, to_double(in.doutput));
    return want;
  };
  c.gradient_step = kLinearStep;
  return c;
}

OpCase add_case(const char* name, const Shape& shape, std::vector<bool> needs_grad, std::uint64_t seed) {
  OpCase c;
  c.op = "add";
  c.name = name;
  c.inputs = {shape, shape};
  c.output = shape;
  c.needs_grad = std::move(needs_grad);
  c.make_layer = [] { return std::make_unique<Add>("shortcut"); };
  c.make_inputs = [shape, seed] {
    return OpInputs{{random_tensor(shape, seed), random_tensor(shape, seed + 1)}, random_tensor(shape, seed + 2)};
  };
  c.reference = [](Layer&, const OpInputs& in) {
    ExpectedResults want;
    want.output = reference::add_forward(to_double(in.inputs[0]), to_double(in.inputs[1]));
    want.input_gradients = {to_double(in.doutput), to_double(in.doutput)};
    return want;
  };
  c.gradient_step = kLinearStep;
  return c;
}

// The residual join with its ReLU fused (Add::fuse_relu): max(a + b, 0) forward; the backward passes the
// gradient through unchanged (in a net the ReLU's own backward masks it first), so no finite differences.
OpCase add_relu_case(const Shape& shape, std::uint64_t seed) {
  OpCase c = add_case("with a fused ReLU", shape, {true, true}, seed);
  c.prepare = [](Layer& layer, Backend&) { REQUIRE(layer.fuse_relu()); };
  c.reference = [](Layer&, const OpInputs& in) {
    ExpectedResults want;
    want.output = reference::add_forward(to_double(in.inputs[0]), to_double(in.inputs[1]));
    for (double& y : want.output) y = y > 0 ? y : 0;
    want.input_gradients = {to_double(in.doutput), to_double(in.doutput)};
    return want;
  };
  c.gradient_step.reset();
  return c;
}

}  // namespace

std::vector<OpCase> convolution_cases() {
  const ConvolutionShape shapes[] = {
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
  std::vector<OpCase> cases;
  std::uint64_t seed = 1000;
  for (const ConvolutionShape& s : shapes) cases.push_back(convolution_case(s, seed += 10));
  // The network's first layer gets no input gradient (the images need none); the weight gradients
  // must not depend on one.
  const ConvolutionShape first{"3x3 stride 2 pad 1 without an input gradient (a network's first layer)",
                               Shape{2, 3, 9, 9},
                               4,
                               Window2d::square(3, 2, 1),
                               true,
                               Shape{2, 4, 5, 5}};
  cases.push_back(convolution_case(first, 7, false));
  return cases;
}

std::vector<OpCase> pooling_cases() {
  const PoolingShape shapes[] = {
      {"3x3/2 ceil, 112 -> 56 (GoogLeNet pool1, extra pad 1)", Shape{1, 2, 112, 112}, Window2d::square(3, 2),
       Rounding::ceil, Shape{1, 2, 56, 56}},
      {"3x3/2 floor, odd 7x9", Shape{2, 3, 7, 9}, Window2d::square(3, 2), Rounding::floor, Shape{2, 3, 3, 4}},
      {"3x3/2 ceil, 6x8 (floor would give 2x3; extra pad 1x1)", Shape{2, 3, 6, 8}, Window2d::square(3, 2),
       Rounding::ceil, Shape{2, 3, 3, 4}},
      {"3x3/1 pad 1 (inception pool branch), odd 7x9", Shape{1, 5, 7, 9}, Window2d::square(3, 1, 1), Rounding::floor,
       Shape{1, 5, 7, 9}},
      {"3x3/2 pad 1 ceil, 8x9 (extra pad 1 in h only)", Shape{2, 3, 8, 9}, Window2d::square(3, 2, 1), Rounding::ceil,
       Shape{2, 3, 5, 5}},
      {"2x2/2 pad 1 ceil, 5x6 (Caffe drops a window starting in the padding)", Shape{1, 3, 5, 6},
       Window2d::square(2, 2, 1), Rounding::ceil, Shape{1, 3, 3, 4}},
      {"2x3 kernel, strides 1x2, pad 0x1, ceil (extra pad 1 in w)", Shape{2, 2, 7, 10}, Window2d{2, 3, 1, 2, 0, 1},
       Rounding::ceil, Shape{2, 2, 6, 6}},
      {"5x5/3 ceil, 9x7 (floor would give 2x1; extra pad 2x1)", Shape{2, 2, 9, 7}, Window2d::square(5, 3),
       Rounding::ceil, Shape{2, 2, 3, 2}},
      {"7x7 global (GoogLeNet's last pooling)", Shape{2, 4, 7, 7}, Window2d::square(7), Rounding::floor,
       Shape{2, 4, 1, 1}},
  };
  std::vector<OpCase> cases;
  std::uint64_t seed = 2000;
  for (const PoolingKind kind :
       {PoolingKind::max, PoolingKind::average_include_padding, PoolingKind::average_exclude_padding}) {
    for (const PoolingShape& s : shapes) {
      cases.push_back(pooling_case(kind, s, seed += 10));
      if (kind == PoolingKind::max && s.input[2] * s.input[3] <= kMaxFdElements) {
        cases.push_back(max_pooling_gradient_case(s, seed));
      }
    }
  }
  return cases;
}

std::vector<OpCase> linear_cases() {
  const LinearShape shapes[] = {
      {"2-D input, 10 -> 7", Shape{4, 10}, 7, true},
      {"4-D input flattened per sample, 5x3x3 -> 6", Shape{3, 5, 3, 3}, 6, true},
      {"4-D odd 3x7x9 input, no bias", Shape{2, 3, 7, 9}, 5, false},
      {"2-D input, 17 -> 1, no bias", Shape{5, 17}, 1, false},
  };
  std::vector<OpCase> cases;
  std::uint64_t seed = 3000;
  for (const LinearShape& s : shapes) cases.push_back(linear_case(s, seed += 10));
  return cases;
}

std::vector<OpCase> concat_cases() {
  return {
      concat_case("three inputs, 3 + 5 + 2 channels, odd 7x9",
                  {Shape{2, 3, 7, 9}, Shape{2, 5, 7, 9}, Shape{2, 2, 7, 9}}, {true, true, true}, Shape{2, 10, 7, 9},
                  4010),
      concat_case("three inputs, the middle one needs no gradient",
                  {Shape{2, 3, 5, 3}, Shape{2, 1, 5, 3}, Shape{2, 4, 5, 3}}, {true, false, true}, Shape{2, 8, 5, 3},
                  4020),
      concat_case("2-D inputs (features)", {Shape{3, 4}, Shape{3, 1}}, {true, true}, Shape{3, 5}, 4030),
      concat_case("a single input", {Shape{2, 5, 3, 3}}, {true}, Shape{2, 5, 3, 3}, 4040),
  };
}

std::vector<OpCase> add_cases() {
  return {
      add_case("odd 3x7x9 images", Shape{2, 3, 7, 9}, {true, true}, 5010),
      add_case("2-D, only the second input needs a gradient", Shape{4, 5}, {false, true}, 5020),
      add_relu_case(Shape{2, 3, 7, 9}, 5030),
  };
}

}  // namespace dptrain::testing
