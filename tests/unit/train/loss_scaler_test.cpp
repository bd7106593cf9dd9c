#include "dptrain/train/loss_scaler.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>

#include "dptrain/core/philox.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/trainer.hpp"

using namespace dptrain;

namespace {
Tensor filled(std::initializer_list<float> values) {
  Tensor t = Tensor::empty(Shape{static_cast<std::int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

LossScaleConfig dynamic_config(double initial, std::int64_t interval) {
  LossScaleConfig c;
  c.mode = LossScaleConfig::Mode::dynamic;
  c.initial = initial;
  c.growth_interval = interval;
  return c;
}

std::unique_ptr<Net> lenet(Backend& backend) {
  ModelConfig model;
  model.batch = 8;
  model.channels = 1;
  model.classes = 4;
  auto net = build_model("lenet", backend, model);
  net->initialize(5);
  return net;
}

void fill_batch(Net& net, std::int64_t first, float amplitude = 1.f) {
  const CounterRng rng(3, 7);
  float* px = net.images().data<float>();
  for (std::int64_t i = 0; i < net.images().numel(); ++i)
    px[i] = amplitude * (rng.uniform(static_cast<std::uint64_t>(first * 10000 + i)) - 0.5f);
  for (std::int64_t n = 0; n < 8; ++n)
    net.labels().data<std::int32_t>()[n] = static_cast<std::int32_t>((first + n) % 4);
}

TrainerConfig trainer_config(LossScaleConfig scale) {
  TrainerConfig c;
  c.seed = 5;
  c.schedule.kind = ScheduleKind::constant;
  c.schedule.lr_per_256 = 0.5;
  c.schedule.global_batch = 8;
  c.loss_scale = scale;
  return c;
}

bool same_parameters(Net& a, Net& b) {
  const auto pa = a.parameters(), pb = b.parameters();
  for (std::size_t i = 0; i < pa.size(); ++i) {
    if (std::memcmp(pa[i]->value.raw(), pb[i]->value.raw(), pa[i]->value.bytes()) != 0) return false;
  }
  return true;
}
}  // namespace

TEST_CASE("--loss-scale parsing follows the precision", "[train][loss_scale]") {
  CHECK(parse_loss_scale("auto", Precision::fp16).mode == LossScaleConfig::Mode::dynamic);
  CHECK(parse_loss_scale("auto", Precision::bf16).mode == LossScaleConfig::Mode::none);
  CHECK(parse_loss_scale("auto", Precision::fp32).mode == LossScaleConfig::Mode::none);
  CHECK(parse_loss_scale("none", Precision::fp16).mode == LossScaleConfig::Mode::none);
  const LossScaleConfig fixed = parse_loss_scale("512", Precision::fp16);
  CHECK(fixed.mode == LossScaleConfig::Mode::fixed);
  CHECK(fixed.initial == 512.0);
  CHECK_THROWS_WITH(parse_loss_scale("-3", Precision::fp16), Catch::Contains("positive number"));
  CHECK_THROWS_WITH(parse_loss_scale("big", Precision::fp16), Catch::Contains("positive number"));
  CHECK_THROWS_WITH(parse_precision("fp8"), Catch::Contains("fp32, bf16 or fp16"));
}

TEST_CASE("the dynamic scaler unscales, skips and halves on overflow, and grows after clean steps",
          "[train][loss_scale]") {
  auto backend = make_cpu_backend();
  LossScaler scaler(dynamic_config(1024, 3));
  CHECK(scaler.scale() == 1024.f);
  Tensor g = filled({1024.f, -2048.f, 512.f});
  std::vector<Tensor*> grads{&g};
  CHECK(scaler.unscale(*backend, grads, 1));
  CHECK(g.data<float>()[0] == 1.f);
  CHECK(g.data<float>()[1] == -2.f);
  CHECK(g.data<float>()[2] == 0.5f);

  Tensor bad = filled({1.f, std::numeric_limits<float>::infinity()});
  std::vector<Tensor*> bad_grads{&g, &bad};
  CHECK_FALSE(scaler.unscale(*backend, bad_grads, 2));
  CHECK(scaler.scale() == 512.f);
  CHECK(scaler.skipped_steps() == 1);
  CHECK(scaler.state().clean_steps == 0);

  Tensor nan = filled({std::nanf("")});
  std::vector<Tensor*> nan_grads{&nan};
  CHECK_FALSE(scaler.unscale(*backend, nan_grads, 3));
  CHECK(scaler.scale() == 256.f);

  for (int i = 0; i < 3; ++i) {
    Tensor ok = filled({1.f});
    std::vector<Tensor*> ok_grads{&ok};
    CHECK(scaler.unscale(*backend, ok_grads, 4 + i));
  }
  CHECK(scaler.scale() == 512.f);  // doubled after 3 clean steps
  CHECK(scaler.state().clean_steps == 0);
  CHECK(scaler.skipped_steps() == 2);

  // The state survives a checkpoint.
  LossScaler resumed(dynamic_config(65536, 3));
  resumed.restore({512.0, 2});
  CHECK(resumed.scale() == 512.f);
  Tensor ok = filled({1.f});
  std::vector<Tensor*> ok_grads{&ok};
  CHECK(resumed.unscale(*backend, ok_grads, 10));
  CHECK(resumed.scale() == 1024.f);  // the third clean step of the interval

  // A dynamic scale that fell to exactly 1 resumes at 1; a checkpoint of a run without scaling
  // (clean_steps -1) leaves the scaler at its own start.
  LossScaler fallen(dynamic_config(65536, 3));
  fallen.restore({1.0, 0});
  CHECK(fallen.scale() == 1.f);
  LossScaler fresh(dynamic_config(65536, 3));
  LossScaler disabled(LossScaleConfig{});
  CHECK(disabled.state_for_checkpoint().clean_steps == -1);
  fresh.restore(disabled.state_for_checkpoint());
  CHECK(fresh.scale() == 65536.f);
}

TEST_CASE("a fixed loss scale that overflows stops the run with a sentence", "[train][loss_scale]") {
  auto backend = make_cpu_backend();
  LossScaleConfig c;
  c.mode = LossScaleConfig::Mode::fixed;
  c.initial = 8;
  LossScaler scaler(c);
  Tensor bad = filled({std::numeric_limits<float>::infinity()});
  std::vector<Tensor*> grads{&bad};
  CHECK_THROWS_WITH(scaler.unscale(*backend, grads, 7), Catch::Contains("step 7") && Catch::Contains("--loss-scale"));
}

TEST_CASE("training with a power-of-two loss scale is bit-identical to training without one", "[train][loss_scale]") {
  // Multiplying by 2^k and by 2^-k is exact in binary floating point (far from overflow and
  // underflow), so the scaled backward pass must give exactly the unscaled gradients.
  auto backend = make_cpu_backend();
  auto plain = lenet(*backend), scaled = lenet(*backend);
  Trainer a(*plain, trainer_config({}));
  Trainer b(*scaled, trainer_config(dynamic_config(1024, 1000)));
  for (int s = 0; s < 5; ++s) {
    fill_batch(*plain, s * 8);
    fill_batch(*scaled, s * 8);
    const StepResult ra = a.step(0, s * 8), rb = b.step(0, s * 8);
    CHECK(ra.loss == rb.loss);
    CHECK_FALSE(rb.skipped);
  }
  CHECK(b.loss_scaler().scale() == 1024.f);
  CHECK(same_parameters(*plain, *scaled));
  // And the weights did move: the comparison is not between two untouched models.
  auto untouched = lenet(*backend);
  CHECK_FALSE(same_parameters(*plain, *untouched));
}

TEST_CASE("an overflowing step is skipped: the weights and momentum stay, the scale halves", "[train][loss_scale]") {
  auto backend = make_cpu_backend();
  auto net = lenet(*backend), reference = lenet(*backend);
  // Inputs of amplitude 1e4 make weight gradients of far more than 2, and 2^127 times those
  // overflows fp32.
  Trainer trainer(*net, trainer_config(dynamic_config(std::ldexp(1.0, 127), 1000)));
  fill_batch(*net, 0, 1e4f);
  const StepResult r = trainer.step(0, 0);
  CHECK(r.skipped);
  CHECK(std::isfinite(r.loss));
  CHECK(trainer.global_step() == 1);
  CHECK(trainer.loss_scaler().scale() == static_cast<float>(std::ldexp(1.0, 126)));
  CHECK(trainer.loss_scaler().skipped_steps() == 1);
  CHECK(same_parameters(*net, *reference));
  for (const Buffer& v : trainer.optimizer().momentum_buffers()) {
    const float* p = v.value.data<float>();
    for (std::int64_t i = 0; i < v.value.numel(); ++i) REQUIRE(p[i] == 0.f);
  }
  // Halving until the gradients fit: training then proceeds.
  int skipped = 1;
  for (int s = 1; s < 120 && trainer.step(0, 0).skipped; ++s) ++skipped;
  CHECK(skipped < 120);
  CHECK(trainer.loss_scaler().skipped_steps() == skipped);
  CHECK_FALSE(same_parameters(*net, *reference));
}
