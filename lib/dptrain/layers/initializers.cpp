#include "dptrain/layers/initializers.hpp"

#include <cmath>

#include "dptrain/core/error.hpp"
#include "dptrain/core/philox.hpp"

namespace dptrain {

void init_he_normal(Backend& backend, Parameter& p, std::int64_t fan_in, std::uint64_t seed) {
  Tensor host = Tensor::empty(p.value.shape());
  const CounterRng rng(seed, stream_id(p.name.c_str()));
  const float stddev = std::sqrt(2.0f / static_cast<float>(fan_in));
  float* v = host.data<float>();
  for (std::int64_t i = 0; i < host.numel(); ++i) v[i] = stddev * rng.normal(static_cast<std::uint64_t>(i));
  backend.copy_from_host(host, p.value);
}

void init_xavier_uniform(Backend& backend, Parameter& p, std::int64_t fan_in, std::uint64_t seed) {
  Tensor host = Tensor::empty(p.value.shape());
  const CounterRng rng(seed, stream_id(p.name.c_str()));
  const float limit = std::sqrt(3.0f / static_cast<float>(fan_in));
  float* v = host.data<float>();
  for (std::int64_t i = 0; i < host.numel(); ++i)
    v[i] = limit * (2.0f * rng.uniform(static_cast<std::uint64_t>(i)) - 1.0f);
  backend.copy_from_host(host, p.value);
}

void init_weights(Backend& backend, Parameter& p, WeightInit init, std::int64_t fan_in, std::uint64_t seed) {
  switch (init) {
    case WeightInit::he_normal: init_he_normal(backend, p, fan_in, seed); return;
    case WeightInit::xavier_uniform: init_xavier_uniform(backend, p, fan_in, seed); return;
  }
  throw Error(detail::concat(p.name, ": unknown weight initialisation ", static_cast<int>(init)));
}

void init_constant(Backend& backend, Tensor& t, float value) { backend.fill(t, value); }

Parameter make_parameter(Backend& backend, std::string name, const Shape& shape, bool decay) {
  return Parameter{std::move(name), backend.allocate_zeros(shape), backend.allocate_zeros(shape), decay};
}

}  // namespace dptrain
