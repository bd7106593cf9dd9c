#include <catch2/catch.hpp>
#include <cmath>

#include "dptrain/layers/add.hpp"
#include "dptrain/layers/convolution.hpp"
#include "dptrain/layers/softmax_cross_entropy.hpp"
#include "dptrain/net/blocks.hpp"
#include "support/tensor_testing.hpp"

using namespace dptrain;

namespace {
// A small DAG with what the big models have: a tensor read by four layers (an inception input), a
// concat, a residual add, batch norm, and a training-only auxiliary loss. No ReLU, so the loss is
// smooth and finite differences are accurate.
std::unique_ptr<Net> small_dag(Backend& backend, bool with_aux) {
  NetBuilder b(backend, Shape{3, 2, 6, 6});
  auto conv = [&](const std::string& name, int x, int out, Window2d w) {
    return b.add(std::make_unique<Convolution>(name, out, w), {x});
  };
  const int stem = conv("stem", NetBuilder::kImages, 4, Window2d::square(3, 1, 1));
  const int a = blocks::conv_bn(b, "branch_a", stem, 3, Window2d::square(1));
  const int c = conv("branch_c", stem, 4, Window2d::square(3, 1, 1));
  const int both = blocks::concat(b, "mixed", {a, c});
  const int merged = conv("merge", both, 4, Window2d::square(1));
  const int sum = b.add(std::make_unique<Add>("shortcut"), {merged, stem});
  const int pooled = blocks::global_avg_pool(b, "pool", sum);
  blocks::loss(b, "loss", blocks::linear(b, "fc", pooled, 5));
  if (with_aux) blocks::loss(b, "aux/loss", blocks::linear(b, "aux/fc", stem, 5), 0.3f, 0.f, true);
  return b.build();
}

// y = 0.5 x, whose backward can add its input gradient to one already written (as cuDNN's convolution
// does with beta = 1), or not: a CPU stand-in for Layer::accumulate_input_gradient.
class HalfScale final : public Layer {
 public:
  HalfScale(std::string name, bool can_accumulate) : Layer(std::move(name)), can_accumulate_(can_accumulate) {}
  const char* kind() const override { return "half_scale"; }
  Shape setup(std::span<const Shape> inputs, Backend& backend) override {
    check_input_count(inputs, 1);
    backend_ = &backend;
    return inputs[0];
  }
  void forward(const PassContext&, std::span<const Tensor* const> inputs, Tensor& output) override {
    backend_->axpby(0.5f, *inputs[0], 0.f, output);
  }
  void backward(std::span<const Tensor* const>, const Tensor&, const Tensor& doutput,
                std::span<Tensor* const> dinputs) override {
    if (dinputs[0] != nullptr) backend_->axpby(0.5f, doutput, accumulating_ ? 1.f : 0.f, *dinputs[0]);
  }
  bool backward_reads_input(std::size_t) const override { return false; }
  bool backward_reads_output() const override { return false; }
  bool can_accumulate_input_gradient(std::size_t input) const override { return can_accumulate_ && input == 0; }
  void accumulate_input_gradient(std::size_t) override { accumulating_ = true; }
  bool accumulating() const { return accumulating_; }

 private:
  Backend* backend_ = nullptr;
  bool can_accumulate_, accumulating_ = false;
};

// The stem is read by a HalfScale and then by a convolution: the convolution's backward (the later
// consumer) writes the stem's gradient first, the HalfScale's adds to it, in itself or via a scratch.
std::unique_ptr<Net> fan_out(Backend& backend, bool can_accumulate, bool plan) {
  NetBuilder b(backend, Shape{3, 2, 6, 6});
  const int stem = b.add(std::make_unique<Convolution>("stem", 4, Window2d::square(3, 1, 1)), {NetBuilder::kImages});
  const int half = b.add(std::make_unique<HalfScale>("half", can_accumulate), {stem});
  const int conv = b.add(std::make_unique<Convolution>("conv", 4, Window2d::square(3, 1, 1)), {stem});
  const int sum = b.add(std::make_unique<Add>("sum"), {half, conv});
  blocks::loss(b, "loss", blocks::linear(b, "fc", blocks::global_avg_pool(b, "pool", sum), 5));
  return b.build(MemoryOptions{NetPurpose::training, plan});
}

void fill_inputs(Net& net) {
  const Tensor x = testing::random_tensor(net.images().shape(), 5);
  std::copy_n(x.data<float>(), x.numel(), net.images().data<float>());
  for (int n = 0; n < 3; ++n) net.labels().data<std::int32_t>()[n] = n + 1;
}
}  // namespace

TEST_CASE("Net backward sums the gradients of a tensor read by several layers", "[net]") {
  // Finite differences of the whole network's loss against its parameter gradients.
  auto backend = make_cpu_backend();
  auto net = small_dag(*backend, true);
  net->initialize(3);
  fill_inputs(*net);
  const PassContext ctx{true, 1, 0, 0};
  net->forward(ctx);
  net->backward();
  double worst = 0;
  for (Parameter* p : net->parameters()) {
    // Probe a few elements of every parameter with a central difference in double of the fp32 loss.
    for (std::int64_t i : {std::int64_t{0}, p->value.numel() / 2, p->value.numel() - 1}) {
      float& w = p->value.data<float>()[i];
      const float saved = w;
      const double h = 1e-2;
      w = static_cast<float>(saved + h);
      const double plus = net->forward(ctx);
      w = static_cast<float>(saved - h);
      const double minus = net->forward(ctx);
      w = saved;
      const double numeric = (plus - minus) / (2 * h);
      const double exact = p->grad.data<float>()[i];
      const double error = std::abs(numeric - exact) / std::max({std::abs(numeric), std::abs(exact), 1e-2});
      INFO(p->name << "[" << i << "] numeric " << numeric << " exact " << exact);
      CHECK(error < 1e-3);
      worst = std::max(worst, error);
    }
  }
  CHECK(worst < 1e-3);
}

TEST_CASE("evaluation skips the training-only heads", "[net]") {
  auto backend = make_cpu_backend();
  auto with = small_dag(*backend, true);
  auto without = small_dag(*backend, false);
  with->initialize(3);
  without->initialize(3);
  fill_inputs(*with);
  fill_inputs(*without);
  PassContext eval;
  eval.training = false;
  // Same weights (same names, same seed), so the main loss is the same, and evaluation adds no aux loss.
  CHECK(with->forward(eval) == Approx(without->forward(eval)).epsilon(1e-6));
  const double trained = with->forward(PassContext{});
  const std::vector<double> losses = with->losses();
  REQUIRE(losses.size() == 2);
  CHECK(trained == Approx(losses[0] + 0.3 * losses[1]).epsilon(1e-6));
  int training_only = 0;
  for (const auto& node : with->nodes()) training_only += node.training_only;
  CHECK(training_only == 2);  // aux/fc and aux/loss, but not the stem they read
}

TEST_CASE("NetBuilder refuses bad graphs clearly", "[net]") {
  auto backend = make_cpu_backend();
  NetBuilder b(*backend, Shape{2, 3, 8, 8});
  blocks::conv_relu(b, "conv", NetBuilder::kImages, 4, Window2d::square(3));
  CHECK_THROWS_WITH(blocks::conv_relu(b, "conv", NetBuilder::kImages, 4, Window2d::square(3)),
                    Catch::Contains("two layers are named 'conv'"));
  CHECK_THROWS_WITH(blocks::concat(b, "cat", {2, 99}), Catch::Contains("input node 99 does not exist"));
  CHECK_THROWS_WITH(b.build(), Catch::Contains("needs a loss layer"));
  CHECK_THROWS_WITH(NetBuilder(*backend, Shape{2, 3}), Catch::Contains("[N,C,H,W]"));
}

TEST_CASE("a later consumer that can add its input gradient in needs no scratch and gives the same gradients",
          "[net]") {
  auto backend = make_cpu_backend();
  CHECK_FALSE(backend->accumulates_convolution_input_gradient());  // oneDNN: the net sums a scratch
  ConvolutionSpec asked;
  asked.input = Shape{1, 2, 4, 4};
  asked.out_channels = 2;
  asked.window = Window2d::square(3, 1, 1);
  asked.accumulate_input_gradient = true;
  CHECK_THROWS_WITH(backend->make_convolution(asked), Catch::Contains("cannot add into an input gradient"));
  for (const bool plan : {true, false}) {
    INFO((plan ? "planned" : "one buffer per tensor"));
    auto adding = fan_out(*backend, true, plan), summing = fan_out(*backend, false, plan);
    const int half = 3, stem = 2;
    const auto& node = adding->nodes()[half];
    REQUIRE(std::string(node.layer->kind()) == "half_scale");
    CHECK(static_cast<const HalfScale&>(*node.layer).accumulating());
    CHECK(node.accumulates_input == std::vector<bool>{true});
    CHECK_FALSE(node.input_scratch[0].defined());
    CHECK(adding->memory_plan().accumulates(half, 0));
    CHECK(adding->memory_plan().scratch_of(half, 0) < 0);
    CHECK_FALSE(summing->memory_plan().accumulates(half, 0));
    CHECK(summing->memory_plan().scratch_of(half, 0) >= 0);
    CHECK_FALSE(static_cast<const HalfScale&>(*summing->nodes()[half].layer).accumulating());
    CHECK(verify_memory_plan(adding->plan_nodes(), adding->memory_plan()).empty());
    if (plan) CHECK(adding->activation_bytes() <= summing->activation_bytes());
    for (Net* net : {adding.get(), summing.get()}) {
      net->initialize(3);
      fill_inputs(*net);
      net->forward(PassContext{true, 1, 0, 0});
      net->backward();
    }
    // The stem's gradient is the convolution's plus half the sum's gradient either way.
    const auto pa = adding->parameters(), pb = summing->parameters();
    REQUIRE(pa.size() == pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i) {
      INFO(pa[i]->name);
      CHECK(testing::relative_error(pa[i]->grad, pb[i]->grad) < 1e-6);
    }
    CHECK(testing::relative_error(adding->nodes()[stem].grad, summing->nodes()[stem].grad) < 1e-6);
  }
}
