// The drivers of op_cases.hpp: reference check, finite-difference check, timing.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <memory>

#include "support/op_cases.hpp"
#include "support/tensor_testing.hpp"

namespace dptrain::testing {

OpInputs random_op_inputs(std::span<const Shape> inputs, const Shape& output, std::uint64_t seed, float low,
                          float high) {
  OpInputs in;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    in.inputs.push_back(random_tensor(inputs[i], seed + 1 + i, low, high));
  in.doutput = random_tensor(output, seed + 1 + inputs.size());
  return in;
}

void randomize_parameters(Layer& layer, Backend& backend, std::uint64_t seed) {
  std::uint64_t k = 0;
  for (Parameter& p : layer.parameters()) {
    write_to(backend, random_tensor(p.value.shape(), seed + k++), p.value);
    backend.fill(p.grad, 1000.f);
  }
}

std::vector<std::vector<double>> parameter_values(Layer& layer) {
  std::vector<std::vector<double>> values;
  for (const Parameter& p : layer.parameters()) values.push_back(to_double(p.value));
  return values;
}

GradientMask::GradientMask(const OpCase& c)
    : flags_(std::make_unique<bool[]>(c.inputs.size())), size_(c.inputs.size()) {
  REQUIRE((c.needs_grad.empty() || c.needs_grad.size() == c.inputs.size()));
  for (std::size_t i = 0; i < size_; ++i) flags_[i] = c.needs_grad.empty() || c.needs_grad[i];
}

namespace {

// Run with -s to see the measured errors in the expansion.
void check_close(const std::string& what, const Tensor& actual, const std::vector<double>& expected, double tolerance) {
  INFO(what);
  const double error = relative_error(actual, expected);
  CHECK(error < tolerance);
}

// run_layer hands backward zeroed tensors, which cannot tell writing from adding. Runs backward again
// into stale tensors and expects the gradients run_layer got. Call it right after run_layer: max
// pooling's backward needs the forward's workspace.
void check_backward_overwrites(Layer& layer, std::span<const Tensor> inputs, const LayerRun& run, const Tensor& doutput,
                               double tolerance) {
  std::vector<const Tensor*> in;
  std::vector<Tensor> stale(inputs.size());
  std::vector<Tensor*> din;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    in.push_back(&inputs[i]);
    if (run.dinputs[i].defined()) {
      stale[i] = Tensor::empty(inputs[i].shape());
      std::fill_n(stale[i].data<float>(), stale[i].numel(), 1000.f);
    }
    din.push_back(run.dinputs[i].defined() ? &stale[i] : nullptr);
  }
  layer.backward(in, run.output, doutput, din);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!run.dinputs[i].defined()) continue;
    INFO("input gradient " << i << " written over a stale tensor");
    CHECK(relative_error(stale[i], run.dinputs[i]) < tolerance);
  }
}

void check_reference(const OpCase& c, Layer& layer, const Shape& output, const OpInputs& in,
                     std::span<const bool> needs) {
  const double tolerance = c.tolerance.fp32;
  const ExpectedResults want = c.reference(layer, in);
  const LayerRun run = run_layer(layer, output, in.inputs, in.doutput, needs, c.context);
  check_close("output", run.output, want.output, tolerance);
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    if (!needs[i]) {
      CHECK_FALSE(run.dinputs[i].defined());
      continue;
    }
    REQUIRE(run.dinputs[i].shape() == c.inputs[i]);  // the gradient keeps the input's shape
    // Every gradient the layer computes is compared: a reference that gives none is a broken case.
    REQUIRE(i < want.input_gradients.size());
    REQUIRE_FALSE(want.input_gradients[i].empty());
    check_close("input gradient " + std::to_string(i), run.dinputs[i], want.input_gradients[i], tolerance);
  }
  const std::span<Parameter> parameters = layer.parameters();
  REQUIRE(want.parameter_gradients.size() == parameters.size());
  for (std::size_t k = 0; k < want.parameter_gradients.size(); ++k) {
    check_close(parameters[k].name + " gradient", parameters[k].grad, want.parameter_gradients[k], tolerance);
  }
  for (const ExpectedState& s : want.state) check_close(s.name, s.actual(layer), s.expected, tolerance);
  if (c.check_overwrite) check_backward_overwrites(layer, in.inputs, run, in.doutput, tolerance);
}

}  // namespace

void check_op_case(const OpCase& c, Backend& backend) {
  const std::unique_ptr<Layer> layer = c.make_layer();
  const Shape output = layer->setup(c.inputs, backend);
  REQUIRE(output == c.output);
  if (c.prepare) c.prepare(*layer, backend);
  const OpInputs in = c.make_inputs();
  const GradientMask mask(c);
  REQUIRE((c.reference || c.gradient_step));  // a case that checks nothing is a broken case
  if (c.reference) check_reference(c, *layer, output, in, mask.span());
  if (c.gradient_step) {
    // Finite differences over nothing would measure no error at all.
    const std::span<const bool> needs = mask.span();
    REQUIRE((std::find(needs.begin(), needs.end(), true) != needs.end() || !layer->parameters().empty()));
    const double error = finite_difference_error(*layer, output, in.inputs, mask.span(), c.context, *c.gradient_step);
    CHECK(error < c.tolerance.fp32);
  }
}

void time_op_case(const OpCase& c, Backend& backend, int repeats) {
  using Clock = std::chrono::steady_clock;
  const std::unique_ptr<Layer> layer = c.make_layer();
  const Shape output_shape = layer->setup(c.inputs, backend);
  if (c.prepare) c.prepare(*layer, backend);
  const OpInputs in = c.make_inputs();
  const GradientMask mask(c);
  std::vector<const Tensor*> inputs;
  std::vector<Tensor> dinputs(in.inputs.size());
  std::vector<Tensor*> din;
  for (std::size_t i = 0; i < in.inputs.size(); ++i) {
    inputs.push_back(&in.inputs[i]);
    if (mask.span()[i]) dinputs[i] = Tensor::zeros(c.inputs[i]);
    din.push_back(mask.span()[i] ? &dinputs[i] : nullptr);
  }
  Tensor output = Tensor::zeros(output_shape);
  // Backward follows the forward it belongs to (plans keep workspaces between the two).
  double forward_ms = 0, backward_ms = 0;
  for (int r = 0; r <= repeats; ++r) {
    const auto start = Clock::now();
    layer->forward(c.context, inputs, output);
    const auto middle = Clock::now();
    layer->backward(inputs, output, in.doutput, din);
    const auto end = Clock::now();
    if (r == 0) continue;  // the warm-up: first-use costs (JIT kernels, allocation)
    forward_ms += std::chrono::duration<double, std::milli>(middle - start).count();
    backward_ms += std::chrono::duration<double, std::milli>(end - middle).count();
  }
  std::printf("%-22s %-70s forward %9.4f ms  backward %9.4f ms\n", c.op.c_str(), c.name.c_str(), forward_ms / repeats,
              backward_ms / repeats);
}

}  // namespace dptrain::testing
