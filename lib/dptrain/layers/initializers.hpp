#pragma once
// Initial parameter values, drawn on the host from Philox keyed by (seed, parameter name) and copied
// to the backend's device, so every rank starts from the same weights without a broadcast.
#include <cstdint>

#include "dptrain/layers/layer.hpp"

namespace dptrain {

// Gaussian with standard deviation sqrt(2 / fan_in) (He et al. 2015), for layers followed by ReLU.
void init_he_normal(Backend& backend, Parameter& p, std::int64_t fan_in, std::uint64_t seed);
void init_constant(Backend& backend, Tensor& t, float value);

// A zeroed parameter (value and gradient) of the given shape on the backend's device.
Parameter make_parameter(Backend& backend, std::string name, const Shape& shape, bool decay);

}  // namespace dptrain
