#pragma once
// Helpers for tests: random host tensors, double-precision copies, error measures, and a
// finite-difference check of a layer's backward pass.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "dptrain/core/tensor.hpp"
#include "dptrain/layers/layer.hpp"

namespace dptrain::testing {

// Uniform in [low, high), reproducible from `seed`.
Tensor random_tensor(const Shape& shape, std::uint64_t seed, float low = -1.f, float high = 1.f);
// Distinct values spaced at least `gap` apart, shuffled (max pooling needs no ties, ReLU no values
// near its kink, for finite differences to be meaningful).
Tensor distinct_tensor(const Shape& shape, std::uint64_t seed, float gap = 0.01f);
Tensor random_labels(std::int64_t count, int classes, std::uint64_t seed);

// A host tensor's copy (same shape, type and bytes).
Tensor copy_of(const Tensor& t);
// Copies host f32 `host` into `destination`, a tensor of `backend`'s (a parameter, a buffer), after
// checking that the shapes agree (copy_from_host checks only the element count).
void write_to(Backend& backend, const Tensor& host, Tensor& destination);
// A training pass of run (seed), epoch and first global sample (what dropout's mask depends on).
PassContext training_pass(std::uint64_t seed, std::uint64_t epoch, std::int64_t first_sample);

std::vector<double> to_double(const Tensor& t);
Tensor from_double(const std::vector<double>& values, const Shape& shape);

// max |a - b| / max(max |b|, floor): the error relative to the reference's scale.
double relative_error(const Tensor& actual, const std::vector<double>& reference, double floor = 1e-6);
double relative_error(const Tensor& actual, const Tensor& reference, double floor = 1e-6);

// Runs a set-up layer's forward and backward on host tensors. `needs_grad[i]` says whether input i
// gets a gradient tensor (labels do not).
struct LayerRun {
  Tensor output;
  std::vector<Tensor> dinputs;  // undefined where no gradient was asked for
};
LayerRun run_layer(Layer& layer, const Shape& output_shape, std::span<const Tensor> inputs, const Tensor& doutput,
                   std::span<const bool> needs_grad, const PassContext& ctx = {});
Tensor run_forward(Layer& layer, const Shape& output_shape, std::span<const Tensor> inputs,
                   const PassContext& ctx = {});

// Finite-difference check of every input gradient (where needs_grad) and parameter gradient of a
// set-up layer. The scalar L = sum(output * r), with r random (or 1 for a one-element output), is
// differentiated along random directions v: (L(x + h v) - L(x - h v)) / 2h against <dL/dx, v>.
// Differentiating a scalar keeps fp32 rounding small next to the derivative. The error is relative to
// sum |g_i v_i| (the scale of the terms, robust to a direction that nearly cancels them). Returns the
// worst relative error over all inputs, parameters and directions.
double finite_difference_error(Layer& layer, const Shape& output_shape, std::span<const Tensor> inputs,
                               std::span<const bool> needs_grad, const PassContext& ctx = {}, double step = 1e-3,
                               int directions = 3);

}  // namespace dptrain::testing
