#include "dptrain/layers/convolution.hpp"

#include "dptrain/layers/initializers.hpp"

namespace dptrain {

Convolution::Convolution(std::string name, int out_channels, Window2d window, bool bias, WeightInit init)
    : Layer(std::move(name)), init_(init) {
  spec_.out_channels = out_channels;
  spec_.window = window;
  spec_.bias = bias;
}

Shape Convolution::setup(std::span<const Shape> inputs, Backend& backend) {
  spec_.who = who();
  check_input_count(inputs, 1);
  spec_.input = inputs[0];
  output_ = convolution_output_shape(spec_, who());
  backend_ = &backend;
  plan_ = backend.make_convolution(spec_);
  params_.clear();
  params_.push_back(make_parameter(backend, name() + "/weight", convolution_weight_shape(spec_), true));
  if (spec_.bias) params_.push_back(make_parameter(backend, name() + "/bias", Shape{spec_.out_channels}, false));
  return output_;
}

void Convolution::forward(const PassContext&, std::span<const Tensor* const> inputs, Tensor& output) {
  check_input(*inputs[0], spec_.input, 0);
  static const Tensor no_bias;
  plan_->forward(*inputs[0], weight().value, spec_.bias ? bias().value : no_bias, output);
}

void Convolution::backward(std::span<const Tensor* const> inputs, const Tensor&, const Tensor& doutput,
                           std::span<Tensor* const> dinputs) {
  check_input(*inputs[0], spec_.input, 0);
  if (dinputs[0] != nullptr) plan_->backward_data(doutput, weight().value, *dinputs[0]);
  Tensor no_bias;
  plan_->backward_weights(*inputs[0], doutput, weight().grad, spec_.bias ? bias().grad : no_bias);
}

bool Convolution::fuse_relu() {
  if (!spec_.fuse_relu) {
    spec_.fuse_relu = true;
    plan_ = backend_->make_convolution(spec_);
  }
  return true;
}

bool Convolution::can_accumulate_input_gradient(std::size_t input) const {
  return input == 0 && backend_ != nullptr && backend_->accumulates_convolution_input_gradient();
}

void Convolution::accumulate_input_gradient(std::size_t input) {
  DPTRAIN_CHECK(can_accumulate_input_gradient(input), who(), ": this backend cannot add into an input gradient");
  if (!spec_.accumulate_input_gradient) {
    spec_.accumulate_input_gradient = true;
    plan_ = backend_->make_convolution(spec_);
  }
}

void Convolution::initialize(std::uint64_t seed) {
  init_weights(*backend_, weight(), init_, spec_.input[1] * spec_.window.kernel_h * spec_.window.kernel_w, seed);
  if (spec_.bias) init_constant(*backend_, bias().value, 0.f);
}

double Convolution::flops_per_sample() const {
  return 2.0 * static_cast<double>(output_.per_sample()) * static_cast<double>(spec_.input[1]) * spec_.window.kernel_h *
         spec_.window.kernel_w;
}

}  // namespace dptrain
