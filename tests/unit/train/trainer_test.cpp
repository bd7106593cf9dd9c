#include "dptrain/train/trainer.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "dptrain/core/accuracy.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/core/philox.hpp"
#include "dptrain/net/models/registry.hpp"
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

// LeNet for the quadrant problem above (28x28x1, 4 classes), initialised from `seed`.
std::unique_ptr<Net> quadrant_lenet(Backend& backend, int batch, std::uint64_t seed) {
  ModelConfig model;
  model.batch = batch;
  model.channels = 1;
  model.classes = 4;
  auto net = build_model("lenet", backend, model);
  net->initialize(seed);
  return net;
}
}  // namespace

TEST_CASE("lenet learns a small synthetic problem", "[train]") {
  auto backend = make_cpu_backend();
  auto net = quadrant_lenet(*backend, 16, 11);
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

TEST_CASE("top_k_correct never counts a score that is not finite as correct", "[train][hostile]") {
  // Hostile rows made here: NaN and infinities at random places, the label's own score among them.
  const CounterRng rng(29, 2);
  const float specials[3] = {std::nanf(""), INFINITY, -INFINITY};
  for (std::uint64_t trial = 0; trial < 200; ++trial) {
    const std::int64_t classes = 2 + static_cast<std::int64_t>(rng.bits(trial * 64) % 9);
    Tensor p = Tensor::empty(Shape{1, classes});
    Tensor labels = Tensor::empty(Shape{1}, DType::i32);
    const auto label = static_cast<std::int32_t>(rng.bits(trial * 64 + 1) % static_cast<std::uint64_t>(classes));
    labels.data<std::int32_t>()[0] = label;
    for (std::int64_t c = 0; c < classes; ++c)
      p.data<float>()[c] = rng.uniform(trial * 64 + 2 + static_cast<std::uint64_t>(c));
    const float special = specials[rng.bits(trial * 64 + 40) % 3];
    const bool on_label = rng.bits(trial * 64 + 41) % 2 == 0;
    const auto other = static_cast<std::int64_t>((label + 1) % classes);
    p.data<float>()[on_label ? label : other] = special;
    for (int k = 1; k <= static_cast<int>(classes); ++k) {
      const std::int64_t correct = top_k_correct(p, labels, k);
      // The label's own score not finite: never correct. Another class scoring NaN or +inf ranks
      // above the label: never top-1.
      if (on_label) REQUIRE(correct == 0);
      if (!on_label && !(special < 0) && k == 1) REQUIRE(correct == 0);
    }
  }
}

TEST_CASE("an evaluation's loss averages only the counted rows of a padded batch", "[train][hostile]") {
  auto backend = make_cpu_backend();
  ModelConfig model;
  model.batch = 8;
  model.channels = 1;
  model.classes = 4;
  model.memory = MemoryOptions{NetPurpose::inference};
  auto net = build_model("lenet", *backend, model);
  net->initialize(5);
  Trainer trainer(*net, TrainerConfig{});
  // Every valid count of a batch of 8, its rows padded with repeats as the loader pads them: the loss
  // is the mean of the valid rows' losses, computed one row at a time on a batch of 1.
  fill_quadrant_batch(*net, 0);
  ModelConfig one = model;
  one.batch = 1;
  auto single = build_model("lenet", *backend, one);
  for (std::size_t i = 0; i < net->parameters().size(); ++i) {
    backend->copy(net->parameters()[i]->value, single->parameters()[i]->value);
  }
  Trainer single_trainer(*single, TrainerConfig{});
  std::vector<double> row_loss(8);
  for (int n = 0; n < 8; ++n) {
    std::copy_n(net->images().data<float>() + n * 28 * 28, 28 * 28, single->images().data<float>());
    single->labels().data<std::int32_t>()[0] = net->labels().data<std::int32_t>()[n];
    row_loss[static_cast<std::size_t>(n)] = single_trainer.evaluate_batch().loss;
  }
  const std::vector<float> images(net->images().data<float>(), net->images().data<float>() + 8 * 28 * 28);
  const std::vector<std::int32_t> labels(net->labels().data<std::int32_t>(), net->labels().data<std::int32_t>() + 8);
  for (int valid = 1; valid <= 8; ++valid) {
    for (int j = 0; j < 8; ++j) {
      const int from = j % valid;
      std::copy_n(images.data() + from * 28 * 28, 28 * 28, net->images().data<float>() + j * 28 * 28);
      net->labels().data<std::int32_t>()[j] = labels[static_cast<std::size_t>(from)];
    }
    net->set_counted_rows(valid);
    const double loss = trainer.evaluate_batch().loss;
    net->set_counted_rows(-1);
    double expected = 0;
    for (int n = 0; n < valid; ++n) expected += row_loss[static_cast<std::size_t>(n)];
    expected /= valid;
    INFO("valid " << valid);
    CHECK(loss == Approx(expected).epsilon(1e-5));
  }
}

namespace {
// Records the calls a step makes to its hooks, as "name" or "gradient:PARAMETER".
struct RecordingHooks final : StepHooks {
  RecordingHooks(std::vector<std::string>& into, std::string name) : calls(into), tag(std::move(name)) {}
  void gradient_ready(Parameter& p) override { calls.push_back(tag + " gradient:" + p.name); }
  void backward_queued() override { calls.push_back(tag + " backward_queued"); }
  void gradients_needed() override { calls.push_back(tag + " gradients_needed"); }
  std::vector<std::string>& calls;
  std::string tag;
};
}  // namespace

TEST_CASE("a step calls its net's hooks: each gradient once, then backward queued, then gradients needed",
          "[train][hooks]") {
  auto backend = make_cpu_backend();
  auto net = quadrant_lenet(*backend, 4, 3);
  TrainerConfig config;
  config.schedule.kind = ScheduleKind::constant;
  config.schedule.lr_per_256 = 0.1;
  config.schedule.global_batch = 4;
  Trainer trainer(*net, config);
  std::vector<std::string> calls;
  RecordingHooks first(calls, "a"), second(calls, "b");
  net->add_step_hooks(first);
  net->add_step_hooks(second);
  CHECK_THROWS_WITH(net->add_step_hooks(first), Catch::Contains("added already"));
  fill_quadrant_batch(*net, 0);
  trainer.step(0, 0);

  // Every parameter's gradient reaches every hook once, before the step's two other calls.
  const std::vector<Parameter*> parameters = net->parameters();
  const std::size_t gradients = 2 * parameters.size();
  REQUIRE(calls.size() == gradients + 4);
  for (const Parameter* p : parameters) {
    for (const std::string tag : {"a", "b"}) {
      CHECK(std::count(calls.begin(), calls.begin() + static_cast<std::ptrdiff_t>(gradients),
                       tag + " gradient:" + p->name) == 1);
    }
  }
  const std::vector<std::string> last(calls.begin() + static_cast<std::ptrdiff_t>(gradients), calls.end());
  CHECK(last ==
        std::vector<std::string>{"a backward_queued", "b backward_queued", "a gradients_needed", "b gradients_needed"});
  // The backward pass runs in reverse: the classifier's gradients come first.
  const std::string classifier = parameters.back()->name.substr(0, parameters.back()->name.find('/'));
  CHECK(calls.front().rfind("a gradient:" + classifier + "/", 0) == 0);

  // Removed hooks hear nothing more; an evaluation calls none.
  net->remove_step_hooks(first);
  calls.clear();
  trainer.step(0, 4);
  CHECK(calls.size() == parameters.size() + 2);
  CHECK(std::none_of(calls.begin(), calls.end(), [](const std::string& c) { return c.rfind("a ", 0) == 0; }));
  calls.clear();
  trainer.evaluate_batch();
  CHECK(calls.empty());
}

TEST_CASE("a queued step's score read after the next step is queued is the score of its own step", "[train]") {
  auto backend = make_cpu_backend();
  auto waiting_net = quadrant_lenet(*backend, 16, 4), late_net = quadrant_lenet(*backend, 16, 4);
  TrainerConfig config;
  config.schedule.kind = ScheduleKind::constant;
  config.schedule.lr_per_256 = 0.5;
  config.schedule.global_batch = 16;
  Trainer waiting(*waiting_net, config), late(*late_net, config);
  std::vector<StepResult> expected, got;
  std::optional<QueuedStep> unread;
  for (int s = 0; s < 5; ++s) {
    fill_quadrant_batch(*waiting_net, s * 16);
    expected.push_back(waiting.step(0, s * 16));
    fill_quadrant_batch(*late_net, s * 16);
    QueuedStep queued = late.queue_step(0, s * 16);
    if (unread) got.push_back(unread->result());
    unread = std::move(queued);
  }
  got.push_back(unread->result());
  CHECK_THROWS_AS(unread->result(), Error);  // once only
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(got[i].loss == expected[i].loss);
    CHECK(got[i].top1 == expected[i].top1);
    CHECK(got[i].top5 == expected[i].top5);
    CHECK(got[i].learning_rate == expected[i].learning_rate);
    CHECK(got[i].skipped == expected[i].skipped);
  }
  CHECK(expected.front().loss != expected.back().loss);  // the steps trained
  // The CPU computes a step while queueing it: reading late buys nothing there.
  CHECK_FALSE(late.late_reads_pay(1));
}
