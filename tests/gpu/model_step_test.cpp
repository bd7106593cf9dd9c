// A whole training step of models from the registry on both backends: the same initial weights and
// batch give the same loss and the same parameter gradients.
//
// A whole model is not compared as one op is. Its backward pass routes each gradient through max
// pooling and ReLU, which are discontinuous: where two pooled values are nearly tied (or a ReLU input
// is nearly 0), an input differing in its last bits sends the gradient elsewhere. Measured on the
// CPU alone at the initial weights used here, perturbing the images and weights by 1e-7 relative
// moves GoogLeNet's conv1 weight gradient by 0.3% (norm-relative), and by bf16's rounding (2^-8)
// lenet's conv1 weight gradient by 10% and an inception-mini batch-norm shift gradient by 42%; the
// first GPU run (H200) met the same figures (0.5%, 10%, 56%). So each gradient's tolerance is measured
// in the same run: the largest change of that gradient when the CPU reference's images and weights
// are perturbed by the precision's rounding (two draws), times 3, and never below the fixed
// tolerance (1e-4 in fp32, 1e-2 in bf16 and fp16). The loss (the forward pass is continuous) stays
// within the fixed tolerance. A gradient whose measured tolerance exceeds 0.8 is mostly noise in that
// precision: it must still be finite, within 0.8 norm-relative, and of the reference's norm within a
// factor of 2 (a zeroed, doubled or garbage gradient fails all three).
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>

#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/synthetic.hpp"
#include "gpu/gpu_testing.hpp"

namespace dptrain {
namespace {
using gpu_testing::norm_relative_error;

constexpr double kMeasuredFactor = 3, kNoiseCap = 0.8;

// The relative size of one rounding in `precision`'s activations (fp32: a long sum's error).
double rounding_of(Precision precision) {
  switch (precision) {
    case Precision::bf16: return std::ldexp(1.0, -8);
    case Precision::fp16: return std::ldexp(1.0, -11);
    case Precision::fp32: break;
  }
  return 1e-6;
}

void perturb(Backend& be, Tensor& t, double relative, std::mt19937& draw) {
  Tensor host = be.to_host(t);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  for (std::int64_t i = 0; i < host.numel(); ++i)
    host.data<float>()[i] *= 1.f + static_cast<float>(relative) * unit(draw);
  be.copy_from_host(host, t);
}

struct Step {
  std::vector<std::string> names;  // "loss", then "<parameter> gradient"
  std::vector<Tensor> values;
};

// One forward and backward of `model` on `be` from the initial weights and a synthetic batch; with
// `perturbation` > 0 the images and weights are first scaled by 1 + u (u uniform in +-perturbation).
// `cpu_unplanned`: the CPU gives every tensor a buffer of its own (the scheme before the memory
// planner), so the GPU's planned net (shared buffers, ReLU in place) is checked against it.
Step run_step(Backend& be, const std::string& model, int batch, bool cpu_unplanned, double perturbation = 0,
              unsigned draw_seed = 0) {
  ModelConfig config;
  config.batch = batch;
  config.classes = 10;
  config.memory.plan = !(cpu_unplanned && be.device().is_cpu());
  auto net = build_model(model, be, config);
  REQUIRE(net->memory_planned() == config.memory.plan);
  net->initialize(3);
  fill_synthetic_batch(be, 3, 0, config.classes, net->images(), net->labels());
  if (perturbation > 0) {
    std::mt19937 draw(draw_seed);
    perturb(be, net->images(), perturbation, draw);
    for (Parameter* p : net->parameters()) perturb(be, p->value, perturbation, draw);
  }
  // fp16 trains with loss scaling (its small gradients would otherwise lose bits to subnormals):
  // scaled here as the trainer scales, and the gradients unscaled on the host.
  const float loss_scale = needs_loss_scaling(be.precision()) ? 256.f : 1.f;
  net->set_loss_scale(loss_scale);
  PassContext ctx;
  ctx.seed = 3;
  const double loss = net->forward(ctx);
  net->backward();
  Step step;
  Tensor loss_tensor = Tensor::empty(Shape{1});
  loss_tensor.data<float>()[0] = static_cast<float>(loss);
  step.names.push_back("loss");
  step.values.push_back(loss_tensor);
  for (Parameter* p : net->parameters()) {
    Tensor grad = be.to_host(p->grad);
    for (std::int64_t i = 0; i < grad.numel(); ++i) grad.data<float>()[i] /= loss_scale;
    step.names.push_back(p->name + " gradient");
    step.values.push_back(grad);
  }
  return step;
}

double norm(const Tensor& t) {
  double sum = 0;
  for (std::int64_t i = 0; i < t.numel(); ++i) sum += static_cast<double>(t.data<float>()[i]) * t.data<float>()[i];
  return std::sqrt(sum);
}

bool all_finite(const Tensor& t) {
  return std::all_of(t.data<float>(), t.data<float>() + t.numel(), [](float v) { return std::isfinite(v); });
}

void check_model_step(const std::string& model, int batch = 4, bool cpu_unplanned = false) {
  INFO("model " << model << ", batch " << batch);
  const Step reference = run_step(gpu_testing::cpu(), model, batch, cpu_unplanned);
  for (Precision precision : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    Backend* gpu = gpu_testing::gpu(precision);
    if (gpu == nullptr) {
      WARN("this GPU has no " << name_of(precision) << ": not compared");
      continue;
    }
    const double fixed = precision == Precision::fp32 ? 1e-4 : 1e-2;
    // How much each result moves on the CPU under this precision's rounding: its noise floor here.
    std::vector<double> sensitivity(reference.values.size(), 0);
    for (unsigned draw = 1; draw <= 2; ++draw) {
      const Step moved = run_step(gpu_testing::cpu(), model, batch, cpu_unplanned, rounding_of(precision), draw);
      for (std::size_t i = 0; i < sensitivity.size(); ++i) {
        sensitivity[i] = std::max(sensitivity[i], norm_relative_error(moved.values[i], reference.values[i]));
      }
    }
    const Step actual = run_step(*gpu, model, batch, cpu_unplanned);
    REQUIRE(actual.names == reference.names);
    int noisy = 0;
    for (std::size_t i = 0; i < reference.values.size(); ++i) {
      const Tensor &a = actual.values[i], &r = reference.values[i];
      INFO(reference.names[i] << " on " << gpu->name() << ": CPU shape " << r.shape().to_string() << ", GPU shape "
                              << a.shape().to_string());
      REQUIRE(a.shape() == r.shape());
      const double error = norm_relative_error(a, r);
      const double tolerance = i == 0 ? fixed : std::max(fixed, kMeasuredFactor * sensitivity[i]);
      INFO("norm-relative error " << error << "; the CPU's own change under " << name_of(precision) << " rounding "
                                  << sensitivity[i] << "; tolerance " << tolerance);
      CHECK(all_finite(a));
      if (tolerance <= kNoiseCap) {
        CHECK(error <= tolerance);
        gpu_testing::note_error(precision, error, tolerance, model + " " + reference.names[i]);
      } else {
        ++noisy;
        const double ratio = norm(a) / std::max(norm(r), 1e-30);
        INFO("mostly noise in " << name_of(precision) << ": norm ratio GPU/CPU " << ratio);
        CHECK(error <= kNoiseCap);
        CHECK(ratio >= 0.5);
        CHECK(ratio <= 2.0);
        gpu_testing::note_error(precision, error, kNoiseCap, model + " " + reference.names[i]);
      }
    }
    std::printf("model %s %s: %zu results compared, %d of them mostly rounding noise in this precision\n",
                model.c_str(), std::string(name_of(precision)).c_str(), reference.values.size(), noisy);
  }
}

TEST_CASE("a training step of lenet and inception-mini: CPU and GPU agree, in fp32, bf16 and fp16", "[gpu][model]") {
  check_model_step("lenet");
  check_model_step("inception-mini");
}

TEST_CASE("the same step twice gives the same bits on the GPU (deterministic algorithms, the default)",
          "[gpu][model][determinism]") {
  // Two nets on one backend share its algorithm choices, as the steps of a run and its resume do.
  for (const char* model : {"inception-mini", "googlenet"}) {
    for (Precision precision : {Precision::fp32, Precision::bf16, Precision::fp16}) {
      Backend* gpu = gpu_testing::gpu(precision);
      if (gpu == nullptr) continue;
      INFO("model " << model << " on " << gpu->name());
      const Step first = run_step(*gpu, model, 8, false), second = run_step(*gpu, model, 8, false);
      REQUIRE(first.names == second.names);
      for (std::size_t i = 0; i < first.values.size(); ++i) {
        INFO(first.names[i]);
        const Tensor &a = first.values[i], &b = second.values[i];
        CHECK(std::equal(a.data<float>(), a.data<float>() + a.numel(), b.data<float>(), [](float x, float y) {
          return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
        }));
      }
    }
  }
}

TEST_CASE("the GPU's planned net agrees with the CPU's one buffer per tensor (GoogLeNet with its aux heads)",
          "[gpu][model][memory]") {
  check_model_step("inception-mini", 4, true);
  check_model_step("googlenet", 2, true);
}

}  // namespace
}  // namespace dptrain
