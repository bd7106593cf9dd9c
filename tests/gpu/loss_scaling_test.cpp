// The fp16 loss scaler's device side: scale_and_check_finite (the unscale of the reduced gradients
// and the inf/NaN check in one host read) against the CPU backend, and a whole fp16 step whose
// scaled gradients overflow: skipped on the GPU as on the CPU.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/synthetic.hpp"
#include "dptrain/train/trainer.hpp"
#include "gpu/gpu_testing.hpp"

namespace dptrain {
namespace {
// Values of both signs and many magnitudes (normal, tiny, large), none of them special.
Tensor ramp(std::int64_t n, float offset) {
  Tensor t = Tensor::empty(Shape{n});
  for (std::int64_t i = 0; i < n; ++i) {
    const float magnitude = std::ldexp(1.f + static_cast<float>(i % 97) / 97.f, static_cast<int>(i % 61) - 30);
    t.data<float>()[i] = (i % 3 == 0 ? -magnitude : magnitude) + offset;
  }
  return t;
}

Tensor copy_of(const Tensor& host) {
  Tensor t = Tensor::empty(host.shape());
  std::memcpy(t.raw(), host.raw(), host.bytes());
  return t;
}

// scale_and_check_finite on `be` of copies of `hosts`; the scaled tensors come back in `scaled`.
bool scale_on(Backend& be, const std::vector<Tensor>& hosts, float factor, std::vector<Tensor>& scaled) {
  std::vector<Tensor> on_device;
  for (const Tensor& h : hosts) on_device.push_back(gpu_testing::on(be, h));
  std::vector<Tensor*> pointers;
  for (Tensor& t : on_device) pointers.push_back(&t);
  const bool finite = be.scale_and_check_finite(pointers, factor);
  scaled.clear();
  for (const Tensor& t : on_device) scaled.push_back(copy_of(be.to_host(t)));
  return finite;
}
}  // namespace

TEST_CASE("scale_and_check_finite scales as the CPU does and finds any inf or NaN", "[gpu][loss_scale]") {
  // Sizes from one element to several blocks' worth, so every reduction path is met.
  const std::vector<Tensor> finite = {ramp(1, 0.f), ramp(37, 0.25f), ramp(4099, -1.f), ramp(3'000'001, 0.5f)};
  for (const float factor : {0.125f, 1.f / 65536, 0.3f}) {
    INFO("factor " << factor);
    std::vector<Tensor> cpu_scaled, gpu_scaled;
    CHECK(scale_on(gpu_testing::cpu(), finite, factor, cpu_scaled));
    CHECK(scale_on(gpu_testing::gpu(), finite, factor, gpu_scaled));
    REQUIRE(gpu_scaled.size() == cpu_scaled.size());
    for (std::size_t i = 0; i < cpu_scaled.size(); ++i) {
      INFO("tensor " << i);
      // One correctly rounded f32 product per element on both: the same bits.
      CHECK(std::memcmp(gpu_scaled[i].raw(), cpu_scaled[i].raw(), cpu_scaled[i].bytes()) == 0);
    }
  }
  const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  for (const float special : specials) {
    for (std::size_t tensor = 0; tensor < finite.size(); ++tensor) {
      const std::int64_t n = finite[tensor].numel();
      for (const std::int64_t where : {std::int64_t{0}, n / 2, n - 1}) {
        INFO("value " << special << " in tensor " << tensor << " at " << where);
        std::vector<Tensor> hosts;
        for (const Tensor& t : finite) hosts.push_back(copy_of(t));
        hosts[tensor].data<float>()[where] = special;
        std::vector<Tensor> scaled;
        CHECK_FALSE(scale_on(gpu_testing::gpu(), hosts, 0.5f, scaled));
      }
    }
  }
  // A factor that overflows finite values is caught too (the check is on the scaled values).
  std::vector<Tensor> scaled;
  CHECK_FALSE(scale_on(gpu_testing::gpu(), {ramp(64, 0.f)}, 1e38f, scaled));
}

TEST_CASE("an fp16 step whose scaled gradients overflow is skipped: weights and momentum stay, the scale halves",
          "[gpu][loss_scale]") {
  Backend& be = *gpu_testing::gpu(Precision::fp16);
  ModelConfig model;
  model.batch = 8;
  model.classes = 10;
  auto net = build_model("lenet", be, model);
  net->initialize(5);
  std::vector<Tensor> before;
  for (Parameter* p : net->parameters()) before.push_back(be.to_host(p->value));

  TrainerConfig config;
  config.seed = 5;
  config.schedule.kind = ScheduleKind::constant;
  config.schedule.lr_per_256 = 0.5;
  config.schedule.global_batch = model.batch;
  config.loss_scale.mode = LossScaleConfig::Mode::dynamic;
  // fp16's largest value is 65504: a loss gradient scaled by 2^40 is inf in the first fp16 tensor.
  config.loss_scale.initial = std::ldexp(1.0, 40);
  config.loss_scale.growth_interval = 1000;
  Trainer trainer(*net, config);
  fill_synthetic_batch(be, 3, 0, model.classes, net->images(), net->labels());
  const StepResult r = trainer.step(0, 0);
  CHECK(r.skipped);
  CHECK(std::isfinite(r.loss));
  CHECK(trainer.loss_scaler().scale() == static_cast<float>(std::ldexp(1.0, 39)));
  CHECK(trainer.loss_scaler().skipped_steps() == 1);
  const auto parameters = net->parameters();
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    INFO(parameters[i]->name);
    const Tensor now = be.to_host(parameters[i]->value);
    CHECK(std::memcmp(now.raw(), before[i].raw(), now.bytes()) == 0);
  }
  for (const Buffer& v : trainer.optimizer().momentum_buffers()) {
    INFO(v.name);
    const Tensor momentum = be.to_host(v.value);
    CHECK(std::all_of(momentum.data<float>(), momentum.data<float>() + momentum.numel(),
                      [](float m) { return m == 0.f; }));
  }
  // Halving until the gradients fit (from 2^39 to below 65504 / the loss gradient): training goes on.
  int skipped = 1;
  for (int s = 1; s < 60 && trainer.step(0, 0).skipped; ++s) ++skipped;
  CHECK(skipped < 60);
  CHECK(trainer.loss_scaler().skipped_steps() == skipped);
  CHECK(std::memcmp(be.to_host(parameters[0]->value).raw(), before[0].raw(), before[0].bytes()) != 0);
}
}  // namespace dptrain
