// A whole training step of small models from the registry on both backends: the same initial weights
// and batch give the same loss and the same parameter gradients (1e-4 relative in fp32; the CUDA
// backend in bf16 and fp16, activations in 16 bits and f32 master weights, to 1e-2 norm-relative).
#include <catch2/catch.hpp>
#include <cstdint>

#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/synthetic.hpp"
#include "gpu/gpu_testing.hpp"

namespace dptrain {
namespace {
// `cpu_unplanned`: the CPU reference gives every tensor a buffer of its own (the scheme before the
// memory planner), so the GPU's planned net (shared buffers, ReLU in place) is checked against it.
void check_model_step(const std::string& model, int batch = 4, bool cpu_unplanned = false) {
  INFO("model " << model);
  ModelConfig config;
  config.batch = batch;
  config.classes = 10;
  std::vector<std::string> names{"loss"};
  bool named = false;
  gpu_testing::expect_agreement_in_all_precisions(
      [&](Backend& be) {
        ModelConfig c = config;
        c.memory.plan = !(cpu_unplanned && be.device().is_cpu());
        auto net = build_model(model, be, c);
        REQUIRE(net->memory_planned() == c.memory.plan);
        net->initialize(3);
        fill_synthetic_batch(be, 3, 0, config.classes, net->images(), net->labels());
        // fp16 trains with loss scaling (its small gradients would otherwise lose bits to subnormals):
        // scaled here as the trainer scales, and the gradients unscaled on the host.
        const float loss_scale = needs_loss_scaling(be.precision()) ? 256.f : 1.f;
        net->set_loss_scale(loss_scale);
        PassContext ctx;
        ctx.seed = 3;
        const double loss = net->forward(ctx);
        net->backward();
        Tensor loss_tensor = Tensor::empty(Shape{1});
        loss_tensor.data<float>()[0] = static_cast<float>(loss);
        std::vector<Tensor> out{loss_tensor};
        for (Parameter* p : net->parameters()) {
          Tensor grad = be.to_host(p->grad);
          for (std::int64_t i = 0; i < grad.numel(); ++i) grad.data<float>()[i] /= loss_scale;
          out.push_back(grad);
          if (!named) names.push_back(p->name + " gradient");
        }
        named = true;
        return out;
      },
      names);
}

TEST_CASE("a training step of lenet and inception-mini: CPU and GPU agree, in fp32, bf16 and fp16", "[gpu][model]") {
  check_model_step("lenet");
  check_model_step("inception-mini");
}

TEST_CASE("the GPU's planned net agrees with the CPU's one buffer per tensor (GoogLeNet with its aux heads)",
          "[gpu][model][memory]") {
  check_model_step("inception-mini", 4, true);
  check_model_step("googlenet", 2, true);
}
}  // namespace
}  // namespace dptrain
