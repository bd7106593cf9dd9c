// Capture, write, read and apply a real model's state: the resumed net and optimizer hold the same
// bytes, and a checkpoint that does not fit the model is refused before anything is changed.
#include <catch2/catch.hpp>

#include "ckpt_testing.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/checkpoint_writer.hpp"

using namespace dptrain;
using namespace dptrain::testing;

namespace {
ckpt::Progress some_progress() {
  ckpt::Progress p;
  p.epoch = 3;
  p.global_step = 1234;
  p.samples_in_epoch = 4096;
  p.seed = 0xfedcba9876543210ull;  // above INT64_MAX: the bits must survive the int64 attribute
  p.global_batch = 256;
  p.world_size = 8;
  p.schedule.kind = ScheduleKind::step;
  p.schedule.lr_per_256 = 0.1;
  p.schedule.global_batch = 256;
  p.schedule.total_steps = 90000;
  p.schedule.warmup_steps = 500;
  p.schedule.milestones = {30000, 60000, 80000};
  return p;
}
}  // namespace

TEST_CASE("a trained model's state survives write, read and apply byte for byte", "[ckpt]") {
  const std::string name = GENERATE(as<std::string>{}, "lenet", "inception-mini");
  ScratchDirectory dir("ckpt-roundtrip");
  TrainedModel trained = trained_model(name, 10, 7, 2);
  const ckpt::TrainingState captured =
      ckpt::capture_state(*trained.net, trained.trainer->optimizer(), name, some_progress(), R"({"lr": 0.1})");
  REQUIRE(captured.parameters.size() == trained.net->parameters().size());
  const ckpt::WriteReport report = ckpt::write_checkpoint(dir.path(), captured);
  CHECK(report.path == dir.file("ckpt-000001234.h5"));
  CHECK(report.bytes > 0);

  const ckpt::TrainingState read = ckpt::read_checkpoint(report.path);
  CHECK(read.source == report.path);
  CHECK(read.model == name);
  CHECK(read.configuration == R"({"lr": 0.1})");
  CHECK(read.dptrain_version == captured.dptrain_version);
  CHECK(read.progress.seed == 0xfedcba9876543210ull);
  CHECK(read.progress.epoch == 3);
  CHECK(read.progress.samples_in_epoch == 4096);
  CHECK(read.progress.world_size == 8);
  CHECK(read.progress.schedule.kind == ScheduleKind::step);
  CHECK(read.progress.schedule.milestones == std::vector<std::int64_t>{30000, 60000, 80000});
  CHECK(read.progress.schedule.warmup_steps == 500);
  CHECK(read.progress.loss_scale == 1.0);
  CHECK(read.progress.base_lr == Approx(0.1));  // derived at capture: 0.1 per 256 at a global batch of 256
  CHECK(read.optimizer.sgd.momentum == trained.trainer->optimizer().config().momentum);
  CHECK(read.optimizer.sgd.weight_decay == trained.trainer->optimizer().config().weight_decay);
  for (std::size_t i = 0; i < read.parameters.size(); ++i) {
    CHECK(read.parameters[i].name == captured.parameters[i].name);  // build order is kept
  }

  TrainedModel fresh = trained_model(name, 10, 99, 0);  // other weights, zero momentum
  REQUIRE_FALSE(identical(snapshot(fresh), snapshot(trained)));
  ckpt::apply_state(read, name, *fresh.net, fresh.trainer->optimizer());
  CHECK(identical(snapshot(fresh), snapshot(trained)));
}

TEST_CASE("a checkpoint of another model or shape is refused and changes nothing", "[ckpt]") {
  TrainedModel lenet = trained_model("lenet", 10, 7, 1);
  ScratchDirectory dir("ckpt-mismatch");
  const std::string path =
      ckpt::write_checkpoint(
          dir.path(), ckpt::capture_state(*lenet.net, lenet.trainer->optimizer(), "lenet", some_progress(), "{}"))
          .path;
  const ckpt::TrainingState state = ckpt::read_checkpoint(path);

  SECTION("another model") {
    TrainedModel mini = trained_model("inception-mini", 10, 3, 0);
    const auto before = snapshot(mini);
    CHECK_THROWS_WITH(ckpt::apply_state(state, "inception-mini", *mini.net, mini.trainer->optimizer()),
                      Catch::Contains("checkpoint " + path + " was written for model lenet, not inception-mini"));
    CHECK(identical(snapshot(mini), before));
  }
  SECTION("a parameter of another shape, named with both shapes") {
    TrainedModel four = trained_model("lenet", 4, 3, 0);  // the classifier has 4 outputs, not 10
    const auto before = snapshot(four);
    CHECK_THROWS_WITH(ckpt::apply_state(state, "lenet", *four.net, four.trainer->optimizer()),
                      Catch::Matches("parameter \\S+/weight has shape \\[10,\\d+\\] in checkpoint " + path +
                                     " but \\[4,\\d+\\] in this model"));
    CHECK(identical(snapshot(four), before));
  }
  SECTION("a missing and an extra parameter") {
    TrainedModel target = trained_model("lenet", 10, 3, 0);
    const auto before = snapshot(target);
    ckpt::TrainingState missing = state;
    const std::string last = missing.parameters.back().name;
    missing.parameters.pop_back();
    CHECK_THROWS_WITH(ckpt::apply_state(missing, "lenet", *target.net, target.trainer->optimizer()),
                      Catch::Contains("checkpoint " + path + " has no parameter " + last));
    ckpt::TrainingState extra = state;
    extra.parameters.push_back({"extra/weight", Tensor::zeros(Shape{2})});
    CHECK_THROWS_WITH(ckpt::apply_state(extra, "lenet", *target.net, target.trainer->optimizer()),
                      Catch::Contains("has parameter extra/weight, which model lenet does not have"));
    ckpt::TrainingState no_momentum = state;
    no_momentum.optimizer.momentum.pop_back();
    CHECK_THROWS_WITH(ckpt::apply_state(no_momentum, "lenet", *target.net, target.trainer->optimizer()),
                      Catch::Contains("has no momentum buffer of parameter " + last));
    CHECK(identical(snapshot(target), before));
  }
}
