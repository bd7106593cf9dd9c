#include "dptrain/layers/linear.hpp"

#include "dptrain/layers/initializers.hpp"

namespace dptrain {

Linear::Linear(std::string name, int out_features, bool bias, WeightInit init) : Layer(std::move(name)), init_(init) {
  spec_.out_features = out_features;
  spec_.bias = bias;
}

Shape Linear::setup(std::span<const Shape> inputs, Backend& backend) {
  spec_.who = who();
  check_input_count(inputs, 1);
  DPTRAIN_CHECK(inputs[0].rank() >= 2, who(), ": input must be [N, features...] but has shape ", inputs[0].to_string());
  DPTRAIN_CHECK(spec_.out_features > 0, who(), ": out_features must be positive, not ", spec_.out_features);
  spec_.input = inputs[0];
  backend_ = &backend;
  plan_ = backend.make_linear(spec_);
  params_.clear();
  params_.push_back(make_parameter(backend, name() + "/weight", linear_weight_shape(spec_), true));
  if (spec_.bias) params_.push_back(make_parameter(backend, name() + "/bias", Shape{spec_.out_features}, false));
  return Shape{spec_.input[0], spec_.out_features};
}

void Linear::forward(const PassContext&, std::span<const Tensor* const> inputs, Tensor& output) {
  check_input(*inputs[0], spec_.input, 0);
  static const Tensor no_bias;
  plan_->forward(*inputs[0], weight().value, spec_.bias ? bias().value : no_bias, output);
}

void Linear::backward(std::span<const Tensor* const> inputs, const Tensor&, const Tensor& doutput,
                      std::span<Tensor* const> dinputs) {
  check_input(*inputs[0], spec_.input, 0);
  if (dinputs[0] != nullptr) plan_->backward_data(doutput, weight().value, *dinputs[0]);
  Tensor no_bias;
  plan_->backward_weights(*inputs[0], doutput, weight().grad, spec_.bias ? bias().grad : no_bias);
}

void Linear::initialize(std::uint64_t seed) {
  init_weights(*backend_, weight(), init_, spec_.input.per_sample(), seed);
  if (spec_.bias) init_constant(*backend_, bias().value, 0.f);
}

double Linear::flops_per_sample() const {
  return 2.0 * static_cast<double>(spec_.input.per_sample()) * spec_.out_features;
}

}  // namespace dptrain
