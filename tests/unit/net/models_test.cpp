#include <catch2/catch.hpp>
#include <cmath>

#include "dptrain/core/philox.hpp"
#include "dptrain/net/models/registry.hpp"

using namespace dptrain;

namespace {
std::int64_t count(const std::string& model, int classes, bool aux, int batch = 1) {
  auto backend = make_cpu_backend();
  ModelConfig c;
  c.batch = batch;
  c.classes = classes;
  c.aux_heads = aux;
  c.channels = model == "lenet" ? 1 : 3;
  return build_model(model, *backend, c)->parameter_count();
}
}  // namespace

TEST_CASE("every model has its published parameter count", "[net][models]") {
  CHECK(count("lenet", 10, false) == 431080);         // Caffe's MNIST LeNet
  CHECK(count("alexnet", 1000, false) == 61100840);   // torchvision alexnet
  CHECK(count("googlenet", 1000, false) == 6998552);  // bvlc_googlenet, main path
  CHECK(count("resnet50", 1000, false) == 25557032);  // torchvision resnet50
  CHECK(count("inception-v3", 1000, false) == 23834568);
  CHECK(count("inception-v3", 1000, true) == 27161264);  // torchvision inception_v3 with AuxLogits
  // MXNet's Inception-BN: about 11.3 M (convolutions keep their biases, batch norm has scale and shift).
  CHECK(std::abs(count("inception-bn", 1000, false) - 11.3e6) / 11.3e6 < 0.01);
  CHECK(count("inception-mini", 10, false) > 0);
}

TEST_CASE("unknown models are refused with the list of known ones", "[net][models]") {
  auto backend = make_cpu_backend();
  CHECK_THROWS_WITH(build_model("vgg16", *backend, ModelConfig{}), Catch::Contains("unknown model 'vgg16'") &&
                                                                       Catch::Contains("googlenet") &&
                                                                       Catch::Contains("resnet50"));
}

TEST_CASE("every model runs forward and backward at batch 2", "[net][models][slow]") {
  for (const ModelInfo& info : model_zoo()) {
    DYNAMIC_SECTION(info.name) {
      auto backend = make_cpu_backend();
      ModelConfig c;
      c.batch = 2;
      c.classes = info.name == "lenet" || info.name == "inception-mini" ? 10 : 1000;
      c.channels = info.name == "lenet" || info.name == "inception-mini" ? 1 : 3;
      auto net = build_model(info.name, *backend, c);
      net->initialize(7);
      Tensor& images = net->images();
      for (std::int64_t i = 0; i < images.numel(); ++i)
        images.data<float>()[i] = std::sin(0.001f * static_cast<float>(i));
      net->labels().data<std::int32_t>()[0] = 1;
      net->labels().data<std::int32_t>()[1] = 3;
      const double loss = net->forward(PassContext{true, 7, 0, 0});
      CHECK(std::isfinite(loss));
      CHECK(loss > 0);
      net->backward();
      int without_gradient = 0;
      for (Parameter* p : net->parameters()) {
        bool any = false, finite = true;
        for (std::int64_t i = 0; i < p->grad.numel(); ++i) {
          const float g = p->grad.data<float>()[i];
          any = any || g != 0.f;
          finite = finite && std::isfinite(g);
        }
        INFO(p->name);
        CHECK(finite);
        without_gradient += !any;
      }
      CHECK(without_gradient == 0);
    }
  }
}

// What the first step of `dptrain train` sees, with the defaults: an untrained classifier should be
// unsure, its loss near ln(classes). An initialisation too large for a model without batch norm shows
// here long before it diverges (He's on AlexNet: 35 instead of ln(100) = 4.6; on GoogLeNet: 19 over
// its three heads instead of 7.4). Inputs are standard normal, as the loader's normalised images.
TEST_CASE("every model's untrained loss is about ln(classes)", "[net][models][slow]") {
  constexpr int kClasses = 100;
  for (const ModelInfo& info : model_zoo()) {
    DYNAMIC_SECTION(info.name) {
      auto backend = make_cpu_backend();
      ModelConfig c;
      c.batch = 4;
      c.classes = kClasses;
      c.aux_heads = false;  // the main classifier's loss alone
      c.channels = info.default_image_size <= 32 ? 1 : 3;
      auto net = build_model(info.name, *backend, c);
      net->initialize(1);
      const CounterRng rng(11, 0);
      Tensor& images = net->images();
      for (std::int64_t i = 0; i < images.numel(); ++i) {
        images.data<float>()[i] = rng.normal(static_cast<std::uint64_t>(i));
      }
      for (int n = 0; n < c.batch; ++n) net->labels().data<std::int32_t>()[n] = 17 * n + 3;
      const double loss = net->forward(PassContext{true, 1, 0, 0});
      INFO("loss " << loss << ", ln(classes) " << std::log(kClasses));
      CHECK(std::abs(loss - std::log(kClasses)) < 0.25 * std::log(kClasses));
    }
  }
}

// `dptrain eval --images` and the interop tests read the main classifier's logits after an inference
// forward: on every model, the planned inference net must still hold them when the forward ends (no
// node run after the main loss reuses their storage), equal to those of a net where every tensor has
// its own buffer, and the training-only auxiliary heads must not be among what runs.
TEST_CASE("every model's inference net keeps the main classifier's logits after the forward", "[net][models][slow]") {
  for (const ModelInfo& info : model_zoo()) {
    DYNAMIC_SECTION(info.name) {
      const bool small = info.name == "lenet" || info.name == "inception-mini";
      const auto logits_of = [&](bool plan) {
        auto backend = make_cpu_backend();
        ModelConfig c;
        c.batch = 2;
        c.classes = small ? 10 : 1000;
        c.channels = small ? 1 : 3;
        c.memory.purpose = NetPurpose::inference;
        c.memory.plan = plan;
        auto net = build_model(info.name, *backend, c);
        net->initialize(11);
        Tensor& images = net->images();
        for (std::int64_t i = 0; i < images.numel(); ++i)
          images.data<float>()[i] = std::cos(0.0007f * static_cast<float>(i));
        PassContext pass;
        pass.training = false;
        net->run_forward(pass);
        const Tensor host = backend->to_host(net->logits());
        CHECK(host.shape() == Shape{2, c.classes});
        return std::vector<float>(host.data<float>(), host.data<float>() + host.numel());
      };
      const std::vector<float> planned = logits_of(true), separate = logits_of(false);
      CHECK(planned == separate);
      CHECK(planned.front() != planned.back());  // logits, not a constant or cleared buffer
    }
  }
}
