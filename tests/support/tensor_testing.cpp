#include "support/tensor_testing.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "dptrain/core/philox.hpp"

namespace dptrain::testing {

Tensor random_tensor(const Shape& shape, std::uint64_t seed, float low, float high) {
  Tensor t = Tensor::empty(shape);
  const CounterRng rng(seed, 1);
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    t.data<float>()[i] = low + (high - low) * rng.uniform(static_cast<std::uint64_t>(i));
  }
  return t;
}

Tensor distinct_tensor(const Shape& shape, std::uint64_t seed, float gap) {
  const std::int64_t n = shape.numel();
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const CounterRng rng(seed, 2);
  for (std::int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
    const auto j =
        static_cast<std::int64_t>(rng.bits(static_cast<std::uint64_t>(i)) % static_cast<std::uint64_t>(i + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  Tensor t = Tensor::empty(shape);
  // Values centred on zero, none closer than gap/4 to it (whether n is odd or even).
  for (std::int64_t i = 0; i < n; ++i) {
    t.data<float>()[i] =
        (static_cast<float>(order[static_cast<std::size_t>(i)]) - static_cast<float>(n / 2) + 0.25f) * gap;
  }
  return t;
}

Tensor random_labels(std::int64_t count, int classes, std::uint64_t seed) {
  Tensor t = Tensor::empty(Shape{count}, DType::i32);
  const CounterRng rng(seed, 3);
  for (std::int64_t i = 0; i < count; ++i) {
    t.data<std::int32_t>()[i] =
        static_cast<std::int32_t>(rng.bits(static_cast<std::uint64_t>(i)) % static_cast<std::uint32_t>(classes));
  }
  return t;
}

std::vector<double> to_double(const Tensor& t) {
  const float* p = t.data<float>();
  return std::vector<double>(p, p + t.numel());
}

Tensor from_double(const std::vector<double>& values, const Shape& shape) {
  DPTRAIN_CHECK(static_cast<std::int64_t>(values.size()) == shape.numel(), "from_double: size mismatch");
  Tensor t = Tensor::empty(shape);
  for (std::size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = static_cast<float>(values[i]);
  return t;
}

double relative_error(const Tensor& actual, const std::vector<double>& reference, double floor) {
  DPTRAIN_CHECK(static_cast<std::size_t>(actual.numel()) == reference.size(),
                "relative_error: ", actual.shape().to_string(), " has ", actual.numel(),
                " elements but the reference has ", reference.size());
  double worst = 0, scale = floor;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(actual.data<float>()[i]) - reference[i]));
    scale = std::max(scale, std::abs(reference[i]));
  }
  return worst / scale;
}

double relative_error(const Tensor& actual, const Tensor& reference, double floor) {
  return relative_error(actual, to_double(reference), floor);
}

namespace {
std::vector<const Tensor*> pointers(std::span<const Tensor> inputs) {
  std::vector<const Tensor*> in;
  for (const Tensor& t : inputs) in.push_back(&t);
  return in;
}

double dot(const Tensor& a, const Tensor& b) {
  double sum = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) sum += static_cast<double>(a.data<float>()[i]) * b.data<float>()[i];
  return sum;
}

// sum |a_i b_i|: the size of the terms a dot product adds up, which is the scale its rounding error
// (and so the error of a finite difference along b) is proportional to.
double absolute_dot(const Tensor& a, const Tensor& b) {
  double sum = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    sum += std::abs(static_cast<double>(a.data<float>()[i]) * b.data<float>()[i]);
  }
  return sum;
}

// x += scale * v, in place.
void nudge(Tensor& x, const Tensor& v, double scale) {
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = static_cast<float>(x.data<float>()[i] + scale * v.data<float>()[i]);
  }
}

}  // namespace

Tensor copy_of(const Tensor& t) {
  Tensor c = Tensor::empty(t.shape(), t.dtype());
  std::copy_n(static_cast<const std::byte*>(t.raw()), t.bytes(), static_cast<std::byte*>(c.raw()));
  return c;
}

void write_to(Backend& backend, const Tensor& host, Tensor& destination) {
  REQUIRE(destination.shape() == host.shape());
  backend.copy_from_host(host, destination);
}

PassContext training_pass(std::uint64_t seed, std::uint64_t epoch, std::int64_t first_sample) {
  PassContext ctx;
  ctx.training = true;
  ctx.seed = seed;
  ctx.epoch = epoch;
  ctx.first_sample = first_sample;
  return ctx;
}

Tensor run_forward(Layer& layer, const Shape& output_shape, std::span<const Tensor> inputs, const PassContext& ctx) {
  Tensor output = Tensor::zeros(output_shape);
  const auto in = pointers(inputs);
  layer.forward(ctx, in, output);
  return output;
}

LayerRun run_layer(Layer& layer, const Shape& output_shape, std::span<const Tensor> inputs, const Tensor& doutput,
                   std::span<const bool> needs_grad, const PassContext& ctx) {
  LayerRun run;
  run.output = run_forward(layer, output_shape, inputs, ctx);
  std::vector<Tensor*> din;
  run.dinputs.resize(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const bool wanted = i < needs_grad.size() && needs_grad[i];
    if (wanted) run.dinputs[i] = Tensor::zeros(inputs[i].shape());
    din.push_back(wanted ? &run.dinputs[i] : nullptr);
  }
  const auto in = pointers(inputs);
  layer.backward(in, run.output, doutput, din);
  return run;
}

double finite_difference_error(Layer& layer, const Shape& output_shape, std::span<const Tensor> inputs,
                               std::span<const bool> needs_grad, const PassContext& ctx, double step, int directions) {
  const Tensor projection =
      output_shape.numel() == 1 ? from_double({1.0}, output_shape) : random_tensor(output_shape, 9001, -1.f, 1.f);
  std::vector<Tensor> x;
  for (const Tensor& t : inputs) x.push_back(copy_of(t));
  auto loss = [&]() { return dot(run_forward(layer, output_shape, x, ctx), projection); };

  const LayerRun analytic = run_layer(layer, output_shape, x, projection, needs_grad, ctx);
  std::vector<Tensor> param_grads;
  for (Parameter& p : layer.parameters()) param_grads.push_back(copy_of(p.grad));

  double worst = 0;
  auto check = [&](Tensor& target, const Tensor& gradient, std::uint64_t seed) {
    for (int d = 0; d < directions; ++d) {
      const Tensor v = random_tensor(target.shape(), seed * 131 + static_cast<std::uint64_t>(d), -1.f, 1.f);
      nudge(target, v, step);
      const double plus = loss();
      nudge(target, v, -2 * step);
      const double minus = loss();
      nudge(target, v, step);
      const double numeric = (plus - minus) / (2 * step);
      const double exact = dot(gradient, v);
      // Relative to the terms of <g, v> rather than to their sum, which a random direction can
      // nearly cancel (and then rounding alone would fail the bound).
      const double scale = std::max({absolute_dot(gradient, v), std::abs(numeric), 1e-3});
      worst = std::max(worst, std::abs(numeric - exact) / scale);
    }
  };
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i < needs_grad.size() && needs_grad[i]) check(x[i], analytic.dinputs[i], 17 + i);
  }
  std::size_t k = 0;
  for (Parameter& p : layer.parameters()) {
    check(p.value, param_grads[k], 71 + k);
    ++k;
  }
  return worst;
}

}  // namespace dptrain::testing
