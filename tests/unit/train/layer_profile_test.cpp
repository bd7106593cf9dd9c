// LayerProfiler (`dptrain bench --layers`) on the CPU backend's host clock: every layer timed in both
// passes, the sums consistent with the step, and a profiled step computing what an unprofiled one does.
#include "dptrain/train/layer_profile.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <string>

#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/synthetic.hpp"
#include "dptrain/train/trainer.hpp"

using namespace dptrain;

namespace {
struct Run {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  std::unique_ptr<Net> net;
  std::unique_ptr<Trainer> trainer;
  explicit Run(const std::string& model, int image_size) {
    ModelConfig config;
    config.batch = 2;
    config.classes = 10;
    config.image_size = image_size;
    net = build_model(model, *backend, config);
    net->initialize(3);
    TrainerConfig t;
    t.seed = 3;
    t.schedule.kind = ScheduleKind::constant;
    t.schedule.lr_per_256 = 1.0;
    t.schedule.global_batch = 2;
    trainer = std::make_unique<Trainer>(*net, t);
    fill_synthetic_batch(*backend, 3, 0, 10, net->images(), net->labels());
  }
};
}  // namespace

TEST_CASE("the layer profile times every layer's passes and adds up to at most the step", "[train][profile]") {
  for (const auto& [model, size] : {std::pair<std::string, int>{"lenet", 28}, {"inception-mini", 32}}) {
    INFO(model);
    Run run(model, size);
    LayerProfile profile;
    {
      LayerProfiler profiler(*run.net);
      for (int s = 0; s < 2; ++s) {
        (void)run.trainer->step(0, 0);
        profiler.step_finished();
      }
      profile = profiler.profile();
    }
    CHECK(run.net->step_hooks().empty());  // the profiler took itself out
    CHECK(profile.steps == 2);
    std::map<std::string, int> layers_of_kind;
    for (const Net::Node& node : run.net->nodes()) {
      if (node.layer) ++layers_of_kind[node.layer->kind()];
    }
    std::size_t timed = 0;
    int backward_fused = 0;
    for (const Net::Node& node : run.net->nodes()) backward_fused += node.backward_fused;
    if (model == "inception-mini") CHECK(backward_fused > 0);  // its ReLUs after batch norms
    for (const LayerTime& t : profile.layers) {
      INFO(t.name);
      const Net::Node& node = run.net->nodes().at(t.node);
      REQUIRE(node.layer);
      CHECK(t.name == node.layer->name());
      CHECK(t.kind == node.layer->kind());
      CHECK(t.output == node.shape);
      CHECK(t.forward_ms >= 0);
      CHECK(t.backward_ms >= 0);
      if (node.forward_fused) CHECK(t.forward_ms == 0);    // its producer applies it: no forward of its own
      if (node.backward_fused) CHECK(t.backward_ms == 0);  // nor a backward
      ++timed;
    }
    CHECK(timed == run.net->nodes().size() - 2);  // every layer: all nodes but the images and labels
    int kinds_total = 0;
    for (const LayerKindTime& k : profile.by_kind()) {
      CHECK(k.layers == layers_of_kind[k.kind]);
      kinds_total += k.layers;
    }
    CHECK(kinds_total == static_cast<int>(timed));
    const auto by_kind = profile.by_kind();
    for (std::size_t i = 1; i < by_kind.size(); ++i) CHECK(by_kind[i - 1].total_ms() >= by_kind[i].total_ms());
    // Convolutions do real work in both passes: their time cannot round to nothing.
    const auto conv =
        std::find_if(by_kind.begin(), by_kind.end(), [](const auto& k) { return k.kind == "convolution"; });
    REQUIRE(conv != by_kind.end());
    CHECK(conv->forward_ms > 0);
    CHECK(conv->backward_ms > 0);
    CHECK(profile.step_ms > 0);
    CHECK(profile.after_backward_ms > 0);  // the update
    CHECK(profile.layers_ms() + profile.after_backward_ms <= profile.step_ms);
  }
}

TEST_CASE("a profiled step computes the same bits as an unprofiled one", "[train][profile]") {
  Run plain("inception-mini", 32), profiled("inception-mini", 32);
  LayerProfiler profiler(*profiled.net);
  for (int s = 0; s < 2; ++s) {
    const double a = plain.trainer->step(0, 0).loss;
    const double b = profiled.trainer->step(0, 0).loss;
    profiler.step_finished();
    CHECK(a == b);
  }
  const auto pa = plain.net->parameters(), pb = profiled.net->parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i]->name);
    REQUIRE(pa[i]->value.bytes() == pb[i]->value.bytes());
    CHECK(std::memcmp(pa[i]->value.raw(), pb[i]->value.raw(), pa[i]->value.bytes()) == 0);
  }
}

TEST_CASE("a pass outside a training step is not profiled, and step_finished needs a step", "[train][profile]") {
  Run run("lenet", 28);
  LayerProfiler profiler(*run.net);
  (void)run.trainer->evaluate_batch();
  CHECK_THROWS_WITH(profiler.step_finished(), Catch::Contains("no training step was profiled"));
  CHECK(profiler.profile().steps == 0);
  CHECK(profiler.profile().layers.empty());
}
