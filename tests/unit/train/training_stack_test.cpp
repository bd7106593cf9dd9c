// TrainingStack on one rank: what `train` and `bench` both build from it, in its two parts.
#include "dptrain/train/training_stack.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>

#include "dptrain/train/synthetic.hpp"

namespace dptrain {
namespace {
ModelConfig tiny_lenet() {
  ModelConfig config;
  config.batch = 4;
  config.channels = 1;
  config.image_size = 28;
  config.classes = 10;
  return config;
}

TrainerConfig constant_lr() {
  TrainerConfig config;
  config.schedule.kind = ScheduleKind::constant;
  config.schedule.lr_per_256 = 0.1;
  config.schedule.global_batch = 4;
  return config;
}
}  // namespace

TEST_CASE("a training stack builds the model from its seed, then trains it through the reducer", "[train][stack]") {
  distributed::Job job(distributed::JobOptions{}, 0);
  BackendOptions cpu;
  TrainingStack stack(job, cpu, "lenet", tiny_lenet(), 7);
  CHECK(stack.net().image_shape() == Shape{4, 1, 28, 28});
  // The trainer and the gradient path come second, and only once.
  CHECK_THROWS_WITH(stack.trainer(), Catch::Contains("before start_training()"));
  CHECK_THROWS_WITH(stack.reducer(), Catch::Contains("before start_training()"));
  Trainer& trainer = stack.start_training(constant_lr());
  CHECK(&stack.trainer() == &trainer);
  CHECK_THROWS_WITH(stack.start_training(constant_lr()), Catch::Contains("twice"));

  // The same seed builds the same weights: a second stack is a replica of the first.
  TrainingStack replica(job, cpu, "lenet", tiny_lenet(), 7);
  const std::vector<Parameter*> a = stack.net().parameters();
  const std::vector<Parameter*> b = replica.net().parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Tensor& wa = a[i]->value;
    const Tensor& wb = b[i]->value;
    REQUIRE(wa.numel() == wb.numel());
    CHECK(std::equal(wa.data<float>(), wa.data<float>() + wa.numel(), wb.data<float>()));
  }

  // Steps train: the loss of a batch seen again falls.
  fill_synthetic_batch(stack.backend(), 3, 0, 10, stack.net().images(), stack.net().labels());
  const float first = trainer.step(0, 0).loss;
  float last = first;
  for (int s = 0; s < 10; ++s) last = trainer.step(0, 0).loss;
  CHECK(last < first);

  // One rank waits for nobody: the step's compute time is the whole step.
  const auto start = std::chrono::steady_clock::now();
  CHECK(stack.gradients_ready_at() == 0);
  CHECK(TrainingStack::compute_seconds(stack.gradients_ready_at(), start, 0.25) == 0.25);
  // Where the gradients' moment is known, the compute time ends there, and never goes below zero.
  const double start_seconds = std::chrono::duration<double>(start.time_since_epoch()).count();
  CHECK(TrainingStack::compute_seconds(start_seconds + 0.125, start, 0.25) == Approx(0.125));
  CHECK(TrainingStack::compute_seconds(start_seconds - 1, start, 0.25) == 0);
}

}  // namespace dptrain
