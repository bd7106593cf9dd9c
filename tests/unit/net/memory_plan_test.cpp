// The memory planner: no two live tensors share memory (a replay of the schedule on every zoo model),
// a layer that under-declares what its backward reads is caught, and planned nets train bit-identically
// to nets with one buffer per tensor.
#include "dptrain/net/memory_plan.hpp"

#include <catch2/catch.hpp>
#include <cstring>

#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/synthetic.hpp"
#include "dptrain/train/trainer.hpp"

using namespace dptrain;

namespace {
bool small_model(const std::string& name) { return name == "lenet" || name == "inception-mini"; }

ModelConfig config_for(const std::string& name, int batch, MemoryOptions memory = {}) {
  ModelConfig c;
  c.batch = batch;
  c.classes = small_model(name) ? 10 : 1000;
  c.channels = small_model(name) ? 1 : 3;
  c.memory = memory;
  return c;
}

// A chain images -> conv -> bn -> relu -> pool -> linear -> loss, by hand: sizes in bytes.
std::vector<PlanNode> chain() {
  std::vector<PlanNode> nodes(8);
  nodes[0].planned = nodes[1].planned = false;  // images, labels
  auto layer = [&](int i, std::vector<int> inputs, std::size_t bytes, bool reads_input, bool reads_output) {
    PlanNode& p = nodes[static_cast<std::size_t>(i)];
    p.inputs = std::move(inputs);
    p.bytes = bytes;
    p.needs_grad = true;
    p.backward_reads_input.assign(p.inputs.size(), reads_input);
    p.backward_reads_output = reads_output;
  };
  layer(2, {0}, 1000, true, false);  // convolution
  layer(3, {2}, 1000, true, false);  // batch norm
  layer(4, {3}, 1000, false, true);  // relu
  nodes[4].in_place = true;
  layer(5, {4}, 250, false, false);   // max pooling (workspace inside the plan)
  layer(6, {5}, 40, true, false);     // linear
  layer(7, {6, 1}, 4, false, false);  // loss
  nodes[7].planned = false;
  nodes[7].needs_grad = false;
  nodes[7].backward_reads_input = {false, true};
  return nodes;
}
}  // namespace

TEST_CASE("a conv-bn-relu chain keeps two activations, with ReLU in place", "[net][memory]") {
  const auto nodes = chain();
  const MemoryPlan plan = plan_memory(nodes, NetPurpose::training, 8);
  CHECK(verify_memory_plan(nodes, plan).empty());
  CHECK(plan.in_place(4));
  CHECK_FALSE(plan.in_place(3));
  const auto& t = plan.tensors();
  auto output = [&](int n) { return t[static_cast<std::size_t>(plan.output_of(n))]; };
  auto gradient = [&](int n) { return t[static_cast<std::size_t>(plan.gradient_of(n))]; };
  // ReLU's output is batch norm's output memory; its input gradient its output gradient's.
  CHECK(output(4).offset == output(3).offset);
  CHECK(gradient(3).offset == gradient(4).offset);
  // The convolution's output lives until batch norm's backward (which reads it); the relu output
  // until its own backward; batch norm's output only until the relu overwrote it.
  CHECK(output(2).last == plan.backward_step(3));
  CHECK(output(4).last == plan.backward_step(4));
  CHECK(output(3).last == MemoryPlan::forward_step(4));
  // Pooling reads neither its input nor its output in backward: its output dies at the linear's backward.
  CHECK(output(5).last == plan.backward_step(6));
  // Planned: conv out + relu out + pool out + the larger of the gradients alive at one time, far
  // less than an output and a gradient for each of the five layers.
  CHECK(plan.unplanned_bytes() == 2 * (1000 + 1000 + 1000 + 256 + 40));
  // The most bytes alive at one step (the backward of the pooling: conv out, relu out, the pooling's
  // input and output gradients) is what greedy placement reaches here.
  CHECK(plan.arena_bytes() == 1000 + 1000 + 1000 + 256);
  CHECK(plan.arena_bytes() < plan.unplanned_bytes() / 2);

  const MemoryPlan inference = plan_memory(nodes, NetPurpose::inference, 8);
  CHECK(verify_memory_plan(nodes, inference).empty());
  CHECK(inference.gradient_of(2) < 0);
  // Forward only: two ping-pong buffers (the relu runs in place).
  CHECK(inference.arena_bytes() <= 2000);
}

TEST_CASE("the verifier catches a layer whose backward reads more than it declared", "[net][memory]") {
  auto truth = chain();
  auto lie = truth;
  lie[3].backward_reads_input = {false};  // batch norm claims not to read the convolution's output
  const MemoryPlan plan = plan_memory(lie, NetPurpose::training, 8);
  CHECK(verify_memory_plan(lie, plan).empty());  // consistent with what it was told
  const std::string found = verify_memory_plan(truth, plan);
  INFO(found);
  CHECK_THAT(found, Catch::Contains("backward of node 3 reads the output of node 2") &&
                        Catch::Contains("was written over it since"));
}

TEST_CASE("every zoo model's plan is verified and smaller than one buffer per tensor", "[net][memory][models]") {
  for (const ModelInfo& info : model_zoo()) {
    DYNAMIC_SECTION(info.name) {
      auto backend = make_cpu_backend();
      for (const NetPurpose purpose : {NetPurpose::training, NetPurpose::inference}) {
        auto net = build_model(info.name, *backend, config_for(info.name, 2, MemoryOptions{purpose, true}));
        const MemoryPlan& plan = net->memory_plan();
        INFO((purpose == NetPurpose::training ? "training" : "inference"));
        CHECK(verify_memory_plan(net->plan_nodes(), plan).empty());
        CHECK(net->activation_bytes() == plan.arena_bytes());
        if (!small_model(info.name)) {
          // ImageNet models: at most 40% of the old scheme in training (ResNet-50 28%, Inception-V3
          // 35%); forward only, at most a quarter of one buffer per output (AlexNet 22%).
          CHECK(plan.arena_bytes() * 5 < plan.unplanned_bytes() * 2);
          if (purpose == NetPurpose::inference) CHECK(plan.arena_bytes() * 4 < plan.unplanned_bytes());
        }
        // No planned tensor is placed beyond the arena, and tensors of one storage have one size.
        for (const auto& t : plan.tensors()) CHECK(t.offset + t.bytes <= plan.arena_bytes());
      }
    }
  }
}

TEST_CASE("an inference net has no backward pass and leaves out the training-only heads", "[net][memory]") {
  auto backend = make_cpu_backend();
  auto train = build_model("googlenet", *backend, config_for("googlenet", 2));
  auto infer =
      build_model("googlenet", *backend, config_for("googlenet", 2, MemoryOptions{NetPurpose::inference, true}));
  train->initialize(5);
  infer->initialize(5);
  fill_synthetic_batch(*backend, 5, 0, 1000, train->images(), train->labels());
  fill_synthetic_batch(*backend, 5, 0, 1000, infer->images(), infer->labels());
  const PassContext eval{false, 5, 0, 0};
  const double a = train->forward(eval), b = infer->forward(eval);
  CHECK(a == b);
  const Tensor pa = backend->to_host(train->probabilities()), pb = backend->to_host(infer->probabilities());
  CHECK(std::memcmp(pa.raw(), pb.raw(), pa.bytes()) == 0);
  int skipped = 0;
  for (const auto& node : infer->nodes()) {
    if (node.training_only) {
      CHECK_FALSE(node.output.defined());
      ++skipped;
    }
  }
  CHECK(skipped > 0);
  CHECK(infer->losses().size() == 1);
  CHECK_THROWS_WITH(infer->backward(), Catch::Contains("built for inference"));
  CHECK_THROWS_WITH(infer->forward(PassContext{true, 5, 0, 0}), Catch::Contains("built for inference"));
  CHECK(infer->activation_bytes() * 4 < train->activation_bytes());
}

TEST_CASE("planned nets train bit-identically to one buffer per tensor", "[net][memory][slow]") {
  struct Case {
    std::string model;
    int batch, steps;
  };
  // GoogLeNet with its two auxiliary heads: tensors read by several layers, concat, LRN, dropout.
  // ResNet-50: batch norm with a fused ReLU (oneDNN's fuse_norm_relu) and its backward, and batch norms
  // that join the shortcut, against batch norm, then ReLU.
  for (const Case& c :
       {Case{"lenet", 8, 4}, Case{"inception-mini", 4, 3}, Case{"googlenet", 2, 1}, Case{"resnet50", 2, 2}}) {
    DYNAMIC_SECTION(c.model) {
      auto backend = make_cpu_backend();
      auto planned = build_model(c.model, *backend, config_for(c.model, c.batch));
      auto unplanned =
          build_model(c.model, *backend, config_for(c.model, c.batch, MemoryOptions{NetPurpose::training, false}));
      CHECK(planned->memory_planned());
      CHECK_FALSE(unplanned->memory_planned());
      CHECK(planned->activation_bytes() < unplanned->activation_bytes());
      int fused = 0;
      for (const auto& node : planned->nodes()) fused += node.forward_fused;
      for (const auto& node : unplanned->nodes()) CHECK_FALSE(node.forward_fused);
      // GoogLeNet's ReLUs follow convolutions: they are applied by the convolutions (oneDNN post-op).
      if (c.model == "googlenet") CHECK(fused > 50);
      // ResNet-50's ReLUs: the stem's and two per bottleneck follow batch norms; the third is in the
      // batch norm that joins the shortcut (BatchNormJoin::add_relu).
      if (c.model == "resnet50") CHECK(fused == 1 + 2 * 16);
      // Those after batch norms have their backward done by it (the mask of oneDNN's fused backward).
      int backward_fused = 0;
      for (const auto& node : planned->nodes()) {
        backward_fused += node.backward_fused;
        if (node.backward_fused) CHECK(node.forward_fused);
      }
      for (const auto& node : unplanned->nodes()) CHECK_FALSE(node.backward_fused);
      if (c.model == "resnet50") CHECK(backward_fused == 1 + 2 * 16);
      if (c.model == "googlenet") CHECK(backward_fused == 0);  // no batch norm
      // ResNet-50's residual sums are its joining batch norms, one per bottleneck (two inputs each).
      int joins = 0;
      for (const auto& node : planned->nodes()) {
        joins += node.layer && std::string(node.layer->kind()) == "batch_norm" && node.inputs.size() == 2;
      }
      if (c.model == "resnet50") CHECK(joins == 16);
      planned->initialize(3);
      unplanned->initialize(3);
      TrainerConfig tc;
      tc.seed = 3;
      tc.schedule.kind = ScheduleKind::constant;
      tc.schedule.lr_per_256 = 0.1;
      tc.schedule.global_batch = c.batch;
      Trainer ta(*planned, tc), tb(*unplanned, tc);
      const int classes = small_model(c.model) ? 10 : 1000;
      for (int s = 0; s < c.steps; ++s) {
        fill_synthetic_batch(*backend, 3, s * c.batch, classes, planned->images(), planned->labels());
        fill_synthetic_batch(*backend, 3, s * c.batch, classes, unplanned->images(), unplanned->labels());
        const StepResult ra = ta.step(0, s * c.batch), rb = tb.step(0, s * c.batch);
        CHECK(ra.loss == rb.loss);
      }
      const auto pa = planned->parameters(), pb = unplanned->parameters();
      REQUIRE(pa.size() == pb.size());
      int moved = 0;
      for (std::size_t i = 0; i < pa.size(); ++i) {
        INFO(pa[i]->name);
        CHECK(std::memcmp(pa[i]->value.raw(), pb[i]->value.raw(), pa[i]->value.bytes()) == 0);
        CHECK(std::memcmp(pa[i]->grad.raw(), pb[i]->grad.raw(), pa[i]->grad.bytes()) == 0);
      }
      auto fresh = build_model(c.model, *backend, config_for(c.model, c.batch));
      fresh->initialize(3);
      const auto pf = fresh->parameters();
      for (std::size_t i = 0; i < pa.size(); ++i)
        moved += std::memcmp(pa[i]->value.raw(), pf[i]->value.raw(), pa[i]->value.bytes()) != 0;
      CHECK(moved > static_cast<int>(pa.size()) / 2);  // the weights did train
      const auto ba = planned->buffers(), bb = unplanned->buffers();
      for (std::size_t i = 0; i < ba.size(); ++i)
        CHECK(std::memcmp(ba[i]->value.raw(), bb[i]->value.raw(), ba[i]->value.bytes()) == 0);
    }
  }
}
