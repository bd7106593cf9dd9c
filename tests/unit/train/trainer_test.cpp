#include "dptrain/train/trainer.hpp"

#include <catch2/catch.hpp>
#include <cmath>

#include "dptrain/core/philox.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/accuracy.hpp"
#include "dptrain/train/statistics.hpp"
#include "dptrain/train/synthetic.hpp"

using namespace dptrain;

namespace {
// A learnable problem: class c is a bright 7x7 square in quadrant c of a noisy 28x28 image.
void fill_quadrant_batch(Net& net, std::int64_t first_sample) {
  Tensor& images = net.images();
  const std::int64_t batch = images.shape()[0];
  const CounterRng rng(99, 1);
  for (std::int64_t n = 0; n < batch; ++n) {
    const auto sample = static_cast<std::uint64_t>(first_sample + n);
    const int label = static_cast<int>(rng.bits(sample * 1000) % 4);
    net.labels().data<std::int32_t>()[n] = label;
    float* px = images.data<float>() + n * 28 * 28;
    for (int i = 0; i < 28 * 28; ++i)
      px[i] = 0.3f * (rng.uniform(sample * 1000 + 1 + static_cast<std::uint64_t>(i)) - 0.5f);
    const int y0 = 3 + (label / 2) * 14, x0 = 3 + (label % 2) * 14;
    for (int y = y0; y < y0 + 7; ++y)
      for (int x = x0; x < x0 + 7; ++x) px[y * 28 + x] += 1.f;
  }
}
}  // namespace

TEST_CASE("lenet learns a small synthetic problem", "[train]") {
  auto backend = make_cpu_backend();
  ModelConfig model;
  model.batch = 16;
  model.channels = 1;
  model.classes = 4;
  auto net = build_model("lenet", *backend, model);
  net->initialize(11);
  TrainerConfig config;
  config.seed = 11;
  config.schedule.kind = ScheduleKind::constant;
  config.schedule.lr_per_256 = 0.5;  // 0.03125 at batch 16
  config.schedule.global_batch = 16;
  config.sgd.weight_decay = 0.f;
  Trainer trainer(*net, config);
  fill_quadrant_batch(*net, 0);
  const double first = trainer.step(0, 0).loss;
  CHECK(first > 1.0);  // about ln 4 = 1.39 at the start
  double last = first;
  for (int s = 1; s < 60; ++s) {
    fill_quadrant_batch(*net, s * 16);
    last = trainer.step(0, s * 16).loss;
  }
  CHECK(last < 0.1);
  CHECK(trainer.global_step() == 60);
  // Held-out samples are classified correctly.
  fill_quadrant_batch(*net, 100000);
  const StepResult eval = trainer.evaluate_batch();
  CHECK(eval.top1 >= 15);
  CHECK(eval.top5 == 16);
}

TEST_CASE("top_k_correct counts labels among the k most probable classes", "[train]") {
  Tensor p = Tensor::empty(Shape{3, 4});
  const float rows[3][4] = {{0.1f, 0.6f, 0.2f, 0.1f}, {0.4f, 0.3f, 0.2f, 0.1f}, {0.25f, 0.25f, 0.25f, 0.25f}};
  std::copy(&rows[0][0], &rows[0][0] + 12, p.data<float>());
  Tensor labels = Tensor::empty(Shape{3}, DType::i32);
  labels.data<std::int32_t>()[0] = 1;  // top-1
  labels.data<std::int32_t>()[1] = 2;  // third
  labels.data<std::int32_t>()[2] = 0;  // a four-way tie counts against the label
  CHECK(top_k_correct(p, labels, 1) == 1);
  CHECK(top_k_correct(p, labels, 2) == 1);
  CHECK(top_k_correct(p, labels, 3) == 2);
  CHECK(top_k_correct(p, labels, 4) == 3);
}

TEST_CASE("synthetic batches depend only on the seed and the sample index", "[train]") {
  auto backend = make_cpu_backend();
  Tensor whole = Tensor::empty(Shape{4, 3, 5, 5}), labels = Tensor::empty(Shape{4}, DType::i32);
  fill_synthetic_batch(*backend, 5, 10, 7, whole, labels);
  Tensor half = Tensor::empty(Shape{2, 3, 5, 5}), half_labels = Tensor::empty(Shape{2}, DType::i32);
  fill_synthetic_batch(*backend, 5, 12, 7, half, half_labels);
  for (std::int64_t i = 0; i < half.numel(); ++i) REQUIRE(half.data<float>()[i] == whole.data<float>()[75 * 2 + i]);
  CHECK(half_labels.data<std::int32_t>()[1] == labels.data<std::int32_t>()[3]);
  for (std::int64_t i = 0; i < whole.numel(); ++i) {
    REQUIRE(whole.data<float>()[i] >= -1.f);
    REQUIRE(whole.data<float>()[i] < 1.f);
  }
}

TEST_CASE("summarize gives mean, standard error and spread", "[train]") {
  const Summary s = summarize({10, 12, 14, 16});
  CHECK(s.mean == Approx(13));
  CHECK(s.stderr_of_mean == Approx(std::sqrt(20.0 / 3.0) / 2.0));
  CHECK(s.min == 10);
  CHECK(s.max == 16);
  CHECK(summarize({}).count == 0);
}
