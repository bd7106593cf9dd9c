// TrainingRun on one rank, driven step by step as `dptrain train` drives it: where each step's
// decisions fall (epoch ends, evaluations, checkpoints, a stop), what progress a checkpoint gets,
// and that a stopped and resumed run ends bit for bit where the uninterrupted one does.
#include "dptrain/train/training_run.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/checkpoint_writer.hpp"
#include "dptrain/ckpt/preemption.hpp"
#include "dptrain/core/exit_codes.hpp"
#include "dptrain/interop/weights.hpp"
#include "dptrain/net/net.hpp"
#include "support/dataset_testing.hpp"
#include "support/field_testing.hpp"
#include "support/temp_dir.hpp"

namespace dptrain {
namespace {
namespace fs = std::filesystem;

// A fresh directory per test, removed at the end.
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("dptrain-run") {}
};

const fs::path& tiny_data() {
  static TempDir dir;
  static const bool written = (testing::write_tiny_dataset((dir.path / "data").string()), true);
  (void)written;
  return dir.path;
}

TrainingRunConfig lenet_config(const fs::path& checkpoints) {
  TrainingRunConfig c;
  c.model = "lenet";
  c.data = (tiny_data() / "data").string();
  c.batch = 16;  // 96 training images: 6 steps per epoch
  c.lr = 0.1;    // at 0.5 ip1/weight held NaN by step 8 while the loss stayed finite
  c.loader_threads = 1;
  c.log_every = 1000;
  c.seed = 11;
  c.checkpoints.directory = checkpoints.string();
  return c;
}

std::vector<float> weights(Net& net) {
  std::vector<float> all;
  for (Parameter* p : net.parameters()) {
    const Tensor host = net.backend().to_host(p->value);
    all.insert(all.end(), host.data<float>(), host.data<float>() + host.numel());
  }
  return all;
}

// The values of one parameter of the net (empty when it has none of that name).
std::vector<float> parameter_values(Net& net, const std::string& name) {
  for (Parameter* p : net.parameters()) {
    if (p->name != name) continue;
    const Tensor host = net.backend().to_host(p->value);
    return std::vector<float>(host.data<float>(), host.data<float>() + host.numel());
  }
  return {};
}

// The same, of a checkpoint's state.
std::vector<float> saved_values(const ckpt::TrainingState& state, const std::string& name) {
  for (const ckpt::NamedTensor& t : state.parameters) {
    if (t.name == name) return std::vector<float>(t.value.data<float>(), t.value.data<float>() + t.value.numel());
  }
  return {};
}

TEST_CASE("a run's steps end epochs, evaluate and checkpoint where the configuration says", "[train][run]") {
  TempDir dir;
  TrainingRunConfig c = lenet_config(dir.path / "ckpt");
  c.epochs = 2;
  c.checkpoints.every = "4";
  std::ostringstream out;
  TrainingRun run(c, out);
  CHECK_FALSE(run.resumed());
  CHECK(run.steps_per_epoch() == 6);
  CHECK(run.total_steps() == 12);
  CHECK(run.global_batch() == 16);
  std::vector<std::int64_t> epoch_ends, evaluations, checkpoints;
  while (!run.finished()) {
    const StepOutcome o = run.step();
    const std::int64_t step = run.progress().global_step;
    CHECK_FALSE(o.stop);
    if (o.epoch_end) epoch_ends.push_back(step);
    if (o.evaluated) evaluations.push_back(step);
    if (o.checkpointed) checkpoints.push_back(step);
    if (step == 3) {
      CHECK(run.progress().epoch == 0);
      CHECK(run.progress().samples_in_epoch == 48);
    }
    if (step == 6) {
      CHECK(run.progress().epoch == 1);
      CHECK(run.progress().samples_in_epoch == 0);
    }
  }
  CHECK(epoch_ends == std::vector<std::int64_t>{6, 12});
  CHECK(evaluations == std::vector<std::int64_t>{6, 12});
  CHECK(checkpoints == std::vector<std::int64_t>{4, 8, 12});
  REQUIRE(run.last_evaluation());
  CHECK(run.last_evaluation()->samples == 32);
  CHECK(out.str().find("dptrain train: lenet on tiny (96 images, 4 classes, 28x28x1), 1 rank x batch 16 = 16, 12 "
                       "steps (6 per epoch)") != std::string::npos);

  // The newest checkpoint holds the progress the run reports, and the configuration it was given.
  const ckpt::TrainingState saved = ckpt::read_checkpoint((dir.path / "ckpt" / "ckpt-000000012.h5").string());
  CHECK(field_values(saved.progress) == field_values(run.progress()));
  const TrainingRunConfig stored = parse_stored_configuration(saved.configuration, "test");
  CHECK(stored.model == "lenet");
  CHECK(stored.epochs == 2);
  CHECK(stored.seed == 11);
  CHECK(stored.world_size == 1);
  CHECK(stored.checkpoints.every == "4");
}

TEST_CASE("a run stopped at a step and resumed ends bit for bit where the uninterrupted run does", "[train][run]") {
  TempDir dir;
  TrainingRunConfig c = lenet_config(dir.path / "whole");
  c.steps = 10;
  c.flip = true;
  c.pad = 2;
  c.crop = 28;
  std::ostringstream quiet;
  TrainingRun whole(c, quiet);
  REQUIRE(whole.run() == 0);
  const std::vector<float> expected = weights(whole.net());

  c.checkpoints.directory = (dir.path / "split").string();
  c.checkpoints.stop_at_step = 4;
  {
    TrainingRun first(c, quiet);
    CHECK(first.run() == ckpt::kExitPreempted);
    CHECK(first.finished());
    CHECK(first.progress().global_step == 4);
  }
  c.checkpoints.stop_at_step = 0;
  c.batch = 999;  // not given: a resume keeps the checkpoint's global batch
  std::ostringstream out;
  TrainingRun second(c, out);
  CHECK(second.resumed());
  CHECK(second.first_step() == 4);
  CHECK(second.per_rank_batch() == 16);
  CHECK(out.str().find("resuming from ") != std::string::npos);
  REQUIRE(second.run() == 0);
  CHECK(weights(second.net()) == expected);
  CHECK(field_values(second.progress()) == field_values(whole.progress()));
}

TEST_CASE("a run refuses a finished checkpoint and an ambiguous length", "[train][run]") {
  TempDir dir;
  TrainingRunConfig c = lenet_config(dir.path / "ckpt");
  std::ostringstream quiet;
  CHECK_THROWS_WITH(TrainingRun(c, quiet), Catch::Contains("exactly one of --epochs N and --steps N"));
  // The exit code the command line gives a missing option, from the library itself.
  try {
    TrainingRun run(c, quiet);
    FAIL("a run of no length started");
  } catch (const OptionError& e) {
    CHECK(e.code() == exit_code::option_missing);
  }
  c.steps = 2;
  { TrainingRun(c, quiet).run(); }
  CHECK_THROWS_WITH(TrainingRun(c, quiet),
                    Catch::Contains("it is finished (to train further, raise --steps or --epochs, with --reschedule)"));
  // A longer run from it would decay the cosine schedule over another length: refused unless asked.
  c.steps = 4;
  CHECK_THROWS_WITH(TrainingRun(c, quiet), Catch::Contains("decays its cosine schedule over 2 steps") &&
                                               Catch::Contains("this run's would decay over 4") &&
                                               Catch::Contains("add --reschedule"));
  c.reschedule = true;
  std::ostringstream out;
  TrainingRun longer(c, out);
  CHECK(longer.first_step() == 2);
  CHECK_THAT(out.str(), Catch::Contains("rescheduled: the cosine schedule now decays over 4 steps, not 2"));
  // The constant schedule does not depend on the length: no refusal.
  TempDir other;
  TrainingRunConfig constant = lenet_config(other.path / "ckpt");
  constant.schedule = "constant";
  constant.steps = 2;
  { TrainingRun(constant, quiet).run(); }
  constant.steps = 4;
  CHECK(TrainingRun(constant, quiet).first_step() == 2);
}

TEST_CASE("a second run on a checkpoint directory in use is refused before it trains", "[train][run]") {
  TempDir dir;
  TrainingRunConfig c = lenet_config(dir.path / "ckpt");
  c.steps = 2;
  std::ostringstream quiet;
  TrainingRun first(c, quiet);
  CHECK_THROWS_WITH(TrainingRun(c, quiet), Catch::Contains("the checkpoint directory " + (dir.path / "ckpt").string() +
                                                           " is in use by another run"));
  CHECK(first.run() == 0);  // the holder is not disturbed
}

TEST_CASE("the stored configuration round-trips every field", "[train][fields]") {
  TrainingRunConfig c;
  testing::fill_distinct(c);
  testing::check_fields_differ_from_defaults(c);
  testing::check_round_trips(c);
  CHECK(field_values(parse_stored_configuration(stored_configuration(c), "test")) == field_values(c));
  // A configuration from an older dptrain lacks keys: they keep the defaults.
  CHECK(parse_stored_configuration("{\"crop\": 24}", "test").crop == 24);
  CHECK(parse_stored_configuration("not json", "test").aux_heads);
  // A value outside its field's range is refused, not wrapped.
  CHECK_THROWS_WITH(parse_stored_configuration("{\"crop\": 1099511627776}", "ckpt"),
                    Catch::Contains("ckpt: 'crop' has the wrong type (1099511627776)"));
  CHECK_THROWS_WITH(parse_stored_configuration("{\"seed\": -3}", "ckpt"), Catch::Contains("'seed' has the wrong type"));
}

TEST_CASE("a run fine-tunes imported weights, starting its classifier afresh only when asked", "[train][run]") {
  TempDir dir;
  // Weights of a lenet for 10 classes (the tiny dataset has 4), through safetensors as an import makes them.
  TrainingRunConfig c = lenet_config(dir.path / "trained");
  c.steps = 1;
  std::ostringstream quiet;
  {
    TrainingRun donor(c, quiet);
    REQUIRE(donor.run() == 0);
  }
  ckpt::TrainingState donor = ckpt::read_checkpoint((dir.path / "trained" / "ckpt-000000001.h5").string());
  // The classifier (and its momentum) as if trained for 10 classes.
  const auto as_ten_classes = [](std::vector<ckpt::NamedTensor>& tensors) {
    for (ckpt::NamedTensor& t : tensors) {
      if (!t.name.starts_with("ip2/")) continue;
      std::vector<std::int64_t> dims = t.value.shape().dims();
      dims[0] = 10;
      t.value = Tensor::zeros(Shape(dims));
    }
  };
  as_ten_classes(donor.parameters);
  const std::vector<float> conv1 = saved_values(donor, "conv1/weight");
  const interop::SafetensorsFile file = interop::export_weights(donor, interop::NameStyle::dptrain, {});
  const interop::ImportedWeights w = interop::import_weights(file, "donor", {"lenet", std::nullopt, std::nullopt});
  REQUIRE(w.classes == 10);
  const std::string imported = (dir.path / "imported.h5").string();
  ckpt::write_checkpoint_as(imported, w.state);

  TrainingRunConfig f = lenet_config(dir.path / "fine-tuned");
  f.steps = 2;
  f.batch = 8;
  f.checkpoints.resume = imported;
  CHECK_THROWS_WITH(TrainingRun(f, quiet), Catch::Contains("has classifier ip2/weight of shape [10,500]") &&
                                               Catch::Contains("give --reset-classifier"));
  f.reset_classifier = true;
  {
    std::ostringstream out;
    TrainingRun run(f, out);
    CHECK(run.resumed());
    CHECK(run.first_step() == 0);
    CHECK(run.per_rank_batch() == 8);  // an import has no global batch of its own to keep
    CHECK_THAT(out.str(), Catch::Contains("re-initialised the classifier (ip2/weight, ip2/bias)") &&
                              Catch::Contains("starting from the weights in " + imported));
    CHECK(parameter_values(run.net(), "conv1/weight") == conv1);
    REQUIRE(run.run() == 0);
    CHECK(run.progress().global_step == 2);
  }

  // A requeued fine-tuning job is given --reset-classifier again: its own checkpoint's classifier
  // fits, so it is kept and the run resumes exactly where it stopped.
  const ckpt::TrainingState tuned = ckpt::read_checkpoint((dir.path / "fine-tuned" / "ckpt-000000002.h5").string());
  const std::vector<float> tuned_classifier = saved_values(tuned, "ip2/weight");
  REQUIRE(!tuned_classifier.empty());
  TrainingRunConfig requeued = f;
  requeued.steps = 3;
  requeued.reschedule = true;  // longer than the run it resumes
  requeued.checkpoints.resume = "auto";
  std::ostringstream requeued_out;
  TrainingRun again(requeued, requeued_out);
  CHECK(again.first_step() == 2);
  CHECK_THAT(requeued_out.str(), Catch::Contains("is at step 2 of this run and its classifier fits, so it is kept") &&
                                     !Catch::Contains("re-initialised"));
  CHECK(parameter_values(again.net(), "ip2/weight") == tuned_classifier);

  // The recipe the error below gives: the fine-tuned weights exported and imported (step 0, a
  // classifier that fits) start their classifier afresh when asked, for new classes of that count.
  const std::string restart = (dir.path / "restart.h5").string();
  {
    const interop::SafetensorsFile exported = interop::export_weights(tuned, interop::NameStyle::dptrain, {});
    ckpt::write_new_checkpoint(restart,
                               interop::import_weights(exported, "tuned", {"lenet", std::nullopt, std::nullopt}).state);
  }
  TrainingRunConfig renewed = lenet_config(dir.path / "renewed");
  renewed.steps = 1;
  renewed.batch = 8;
  renewed.checkpoints.resume = restart;
  renewed.reset_classifier = true;
  std::ostringstream renewed_out;
  TrainingRun fresh_head(renewed, renewed_out);
  CHECK_THAT(renewed_out.str(), Catch::Contains("re-initialised the classifier (ip2/weight, ip2/bias)"));
  const std::vector<float> restarted = parameter_values(fresh_head.net(), "ip2/weight");
  REQUIRE(restarted.size() == tuned_classifier.size());
  CHECK(restarted != tuned_classifier);

  // A checkpoint part-way through another run (step 1, 10 classes) is not silently fine-tuned from
  // its step, data position and momentum: the error says how to take its weights alone.
  const std::string midway = (dir.path / "midway.h5").string();
  as_ten_classes(donor.optimizer.momentum);
  ckpt::write_checkpoint_as(midway, donor);
  TrainingRunConfig from_midway = lenet_config(dir.path / "from-midway");
  from_midway.steps = 2;
  from_midway.batch = 8;
  from_midway.checkpoints.resume = midway;
  from_midway.reset_classifier = true;
  CHECK_THROWS_WITH(TrainingRun(from_midway, quiet),
                    Catch::Contains("is at step 1 of another run") && Catch::Contains("dptrain export"));
}

}  // namespace
}  // namespace dptrain

namespace dptrain {

// A step's score is read during the next step (a GPU is then never idle while the host reads),
// except where its own end needs it. Steps 1-12, 6 per epoch, a log line every 4, a checkpoint every 5.
TEST_CASE("a step's score is read at its end only where that end needs it", "[train][run]") {
  TempDir dir;
  TrainingRunConfig c = lenet_config(dir.path / "ckpt");
  c.epochs = 2;
  c.log_every = 4;
  c.checkpoints.every = "5";
  std::ostringstream out;
  {
    // On the CPU (a synchronous backend) reading late buys nothing: every step is read at once.
    TrainingRun at_once(c, out);
    std::int64_t read = 0;
    while (!at_once.finished()) read += at_once.step().result ? 1 : 0;
    CHECK(read == 12);
  }
  fs::remove_all(dir.path / "ckpt");
  out.str("");
  TrainingRun run(c, out);
  run.read_late_everywhere();  // as on one GPU
  std::vector<std::int64_t> scored, checkpointed;
  while (!run.finished()) {
    const StepOutcome o = run.step();
    const std::int64_t step = run.progress().global_step;
    if (o.result) {
      scored.push_back(step);
      CHECK(std::isfinite(o.result->loss));
      CHECK(o.result->top1 <= 16);
    }
    if (o.checkpointed) checkpointed.push_back(step);
  }
  CHECK(checkpointed == std::vector<std::int64_t>{5, 10, 12});
  // The first step, log lines (4, 8, 12), epoch ends (6, 12) and checkpoints.
  CHECK(scored == std::vector<std::int64_t>{1, 4, 5, 6, 8, 10, 12});
  // The steps read late are in the log all the same: the window lines count every step's images.
  for (const char* line : {"step 4/12", "step 8/12", "step 12/12"}) CHECK(out.str().find(line) != std::string::npos);
}

// A score read one step late is still checked: a diverged run ends with the step whose loss was not
// finite, and no checkpoint holds that step (a checkpoint's step is read before it is written).
TEST_CASE("a loss that stops being finite ends the run, even when read a step late", "[train][run]") {
  TempDir dir;
  TrainingRunConfig c = lenet_config(dir.path / "ckpt");
  c.steps = 12;
  c.lr = 30;  // the loss is NaN by step 4 or so
  c.checkpoints.every = "2";
  std::ostringstream out;
  TrainingRun run(c, out);
  run.read_late_everywhere();
  std::int64_t last_checkpoint = 0;
  const auto train = [&] {
    while (!run.finished()) {
      if (run.step().checkpointed) last_checkpoint = run.progress().global_step;
    }
  };
  REQUIRE_THROWS_WITH(train(), Catch::Contains("the loss became"));
  REQUIRE(last_checkpoint > 0);
  char name[32];
  std::snprintf(name, sizeof name, "ckpt-%09lld.h5", static_cast<long long>(last_checkpoint));
  const ckpt::TrainingState saved = ckpt::read_checkpoint((dir.path / "ckpt" / name).string());
  CHECK(saved.progress.global_step == last_checkpoint);
  for (const ckpt::NamedTensor& t : saved.parameters) {
    for (std::int64_t i = 0; i < t.value.numel(); ++i) REQUIRE(std::isfinite(t.value.data<float>()[i]));
  }
}

}  // namespace dptrain

namespace dptrain {

// A run given its data by a relative path stores the absolute one, so that `export` and `eval` find
// the dataset's manifest (normalisation, class names) from any directory.
TEST_CASE("a checkpoint names its dataset by absolute path", "[train][run]") {
  TempDir dir;
  TrainingRunConfig c = lenet_config(dir.path / "ckpt");
  const fs::path absolute = fs::path(c.data);
  c.data = fs::relative(absolute).string();
  REQUIRE(fs::path(c.data).is_relative());
  c.steps = 1;
  std::ostringstream out;
  TrainingRun run(c, out);
  run.run();
  const ckpt::TrainingState saved = ckpt::read_checkpoint((dir.path / "ckpt" / "ckpt-000000001.h5").string());
  const TrainingRunConfig stored = parse_stored_configuration(saved.configuration, "test");
  CHECK(fs::path(stored.data).is_absolute());
  CHECK(fs::equivalent(stored.data, absolute));
}

}  // namespace dptrain
