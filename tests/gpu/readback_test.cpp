// A step's score is read back late: the copies are queued behind the step, the host queues the next
// step, and only then waits. These check that a late read still returns the values of the point it
// was started at (however much work that overwrites them follows), out of order too, and that a
// trainer reading every step one step late trains exactly as one that waits at each step.
#include <catch2/catch.hpp>
#include <cstring>
#include <optional>
#include <vector>

#include "dptrain/core/error.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/synthetic.hpp"
#include "dptrain/train/trainer.hpp"
#include "gpu/gpu_testing.hpp"

namespace dptrain {
namespace {
bool all_equal(const Tensor& host, float value) {
  for (std::int64_t i = 0; i < host.numel(); ++i) {
    if (host.data<float>()[i] != value) return false;
  }
  return true;
}

std::unique_ptr<Net> lenet(Backend& be) {
  ModelConfig config;
  config.batch = 8;
  config.classes = 10;
  auto net = build_model("lenet", be, config);
  net->initialize(5);
  return net;
}

TrainerConfig trainer_config() {
  TrainerConfig c;
  c.schedule.lr_per_256 = 0.5;
  c.schedule.global_batch = 8;
  c.schedule.total_steps = 8;
  c.sgd.momentum = 0.9f;
  return c;
}
}  // namespace

TEST_CASE("a read-back returns the values of the point it was started at, however much work follows",
          "[gpu][readback]") {
  Backend& be = gpu_testing::gpu();
  Tensor a = be.allocate(Shape{300}), b = be.allocate(Shape{2});
  be.fill(a, 1.f);
  be.fill(b, 2.f);
  gpu_testing::ComputeDelay delay(be);
  const std::vector<const Tensor*> both{&a, &b};
  // The stream is kept busy, so both reads below are still queued when the host overwrites the
  // tensors (as the next step's forward does) and starts the next read.
  delay.queue(30);
  std::unique_ptr<PendingRead> first = be.start_to_host_together(both);
  be.fill(a, 3.f);
  be.fill(b, 4.f);
  std::unique_ptr<PendingRead> second = be.start_to_host_together(both);
  be.fill(a, 5.f);
  // Taken in the other order than started.
  const std::vector<Tensor> later = second->wait();
  const std::vector<Tensor> earlier = first->wait();
  REQUIRE(earlier.size() == 2);
  REQUIRE(later.size() == 2);
  CHECK(earlier[0].shape() == Shape{300});
  CHECK(all_equal(earlier[0], 1.f));
  CHECK(all_equal(earlier[1], 2.f));
  CHECK(all_equal(later[0], 3.f));
  CHECK(all_equal(later[1], 4.f));
  CHECK_THROWS_AS(second->wait(), Error);

  // A read dropped unwaited (a step that threw) frees its slot only after its copies: the next read
  // reuses it and sees its own values.
  delay.queue(10);
  { std::unique_ptr<PendingRead> dropped = be.start_to_host_together(both); }
  be.fill(b, 6.f);
  const std::vector<Tensor> after = be.to_host_together(both);
  CHECK(all_equal(after[0], 5.f));
  CHECK(all_equal(after[1], 6.f));
}

TEST_CASE("reading each step's score during the next trains exactly as waiting at each step", "[gpu][readback]") {
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    Backend* be = gpu_testing::gpu(precision);
    if (!be) continue;
    INFO("precision " << name_of(precision));
    auto waiting_net = lenet(*be), late_net = lenet(*be);
    Trainer waiting(*waiting_net, trainer_config()), late(*late_net, trainer_config());
    std::vector<double> waiting_losses, late_losses;
    std::optional<QueuedStep> unread;
    for (int s = 0; s < 6; ++s) {
      fill_synthetic_batch(*be, 7, s * 8, 10, waiting_net->images(), waiting_net->labels());
      waiting_losses.push_back(waiting.step(0, s * 8).loss);
      fill_synthetic_batch(*be, 7, s * 8, 10, late_net->images(), late_net->labels());
      QueuedStep queued = late.queue_step(0, s * 8);
      if (unread) late_losses.push_back(unread->result().loss);
      unread = std::move(queued);
    }
    late_losses.push_back(unread->result().loss);
    CHECK(late_losses == waiting_losses);
    for (std::size_t p = 0; p < waiting_net->parameters().size(); ++p) {
      const Tensor x = be->to_host(waiting_net->parameters()[p]->value);
      const Tensor y = be->to_host(late_net->parameters()[p]->value);
      INFO(waiting_net->parameters()[p]->name);
      CHECK(std::memcmp(x.raw(), y.raw(), x.bytes()) == 0);
    }
  }
}

}  // namespace dptrain
