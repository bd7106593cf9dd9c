#pragma once
// Initial parameter values, drawn on the host from Philox keyed by (seed, parameter name) and copied
// to the backend's device, so every rank starts from the same weights without a broadcast.
#include <cstdint>

#include "dptrain/layers/layer.hpp"

namespace dptrain {

// How a convolution or a linear layer draws its weights (its bias starts at 0).
enum class WeightInit {
  // Gaussian with standard deviation sqrt(2 / fan_in) (He et al. 2015): keeps the signal's variance
  // through a layer followed by ReLU. The default; with batch norm after it the scale hardly matters.
  he_normal,
  // Uniform in +-sqrt(3 / fan_in), variance 1 / fan_in: Caffe's "xavier" filler (Glorot & Bengio 2010
  // with Caffe's default FAN_IN normalisation), for the models without batch norm (LeNet, GoogLeNet,
  // AlexNet), where He's twice that variance compounds (see models/registry.cpp).
  xavier_uniform,
};

// Gaussian with standard deviation sqrt(2 / fan_in) (He et al. 2015), for layers followed by ReLU.
void init_he_normal(Backend& backend, Parameter& p, std::int64_t fan_in, std::uint64_t seed);
// Uniform in [-sqrt(3 / fan_in), sqrt(3 / fan_in)) (Caffe's "xavier").
void init_xavier_uniform(Backend& backend, Parameter& p, std::int64_t fan_in, std::uint64_t seed);
void init_weights(Backend& backend, Parameter& p, WeightInit init, std::int64_t fan_in, std::uint64_t seed);
void init_constant(Backend& backend, Tensor& t, float value);

// A zeroed parameter (value and gradient) of the given shape on the backend's device.
Parameter make_parameter(Backend& backend, std::string name, const Shape& shape, bool decay);

}  // namespace dptrain
