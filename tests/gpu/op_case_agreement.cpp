#include "gpu/op_case_agreement.hpp"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "gpu/gpu_testing.hpp"

namespace dptrain::gpu_testing {
namespace {

// Activations rounded to 16 bits first: then every precision computes from these very values, and
// max pooling sees the same ties (if rounding made any) as the fp32 reference, so its gradients go to
// the same inputs. Labels (i32) are left as they are.
testing::OpInputs rounded_to_16_bits(const testing::OpInputs& host) {
  testing::OpInputs rounded;
  for (const Tensor& t : host.inputs) rounded.inputs.push_back(t.dtype() == DType::f32 ? in_16_bits(t) : t);
  rounded.doutput = in_16_bits(host.doutput);
  return rounded;
}

std::vector<std::string> result_names(const testing::OpCase& c, std::span<const bool> needs) {
  std::vector<std::string> names{"output"};
  for (std::size_t i = 0; i < needs.size(); ++i) {
    if (needs[i]) names.push_back("input gradient " + std::to_string(i));
  }
  const std::unique_ptr<Layer> layer = c.make_layer();
  layer->setup(c.inputs, cpu());
  for (const Parameter& p : layer->parameters()) names.push_back(p.name + " gradient");
  return names;
}

}  // namespace

void expect_op_case_agreement(const testing::OpCase& c) {
  const testing::OpInputs host = rounded_to_16_bits(c.make_inputs());
  const testing::GradientMask mask(c);
  const std::span<const bool> needs = mask.span();
  const Run run = [&](Backend& be) {
    const std::unique_ptr<Layer> layer = c.make_layer();
    const Shape output_shape = layer->setup(c.inputs, be);
    if (c.prepare) c.prepare(*layer, be);
    // Labels stay on the host, as the net keeps them; a loss is one plain f32 value.
    std::vector<Tensor> inputs, dinputs(host.inputs.size());
    std::vector<const Tensor*> in;
    std::vector<Tensor*> din;
    for (std::size_t i = 0; i < host.inputs.size(); ++i) {
      const Tensor& t = host.inputs[i];
      inputs.push_back(t.dtype() == DType::f32 ? on_activation(be, t) : t);
      if (needs[i]) dinputs[i] = activation(be, c.inputs[i]);
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      in.push_back(&inputs[i]);
      din.push_back(needs[i] ? &dinputs[i] : nullptr);
    }
    Tensor output = c.loss ? be.allocate(output_shape) : activation(be, output_shape);
    const Tensor doutput = on_activation(be, host.doutput);
    layer->forward(c.context, in, output);
    layer->backward(in, output, doutput, din);
    std::vector<Tensor> results{be.to_host(output)};
    for (std::size_t i = 0; i < dinputs.size(); ++i) {
      if (needs[i]) results.push_back(be.to_host(dinputs[i]));
    }
    for (const Parameter& p : layer->parameters()) results.push_back(be.to_host(p.grad));
    return results;
  };
  expect_agreement_in_all_precisions(run, result_names(c, needs), c.tolerance);
}

}  // namespace dptrain::gpu_testing
