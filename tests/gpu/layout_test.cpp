// The CUDA backend's activation layout (backend/gpu_layout.hpp): NHWC for 16-bit activations by
// default, DPTRAIN_LAYOUT otherwise (CTest runs this executable under auto, nchw and nhwc). Copies to
// and from the host and between layouts move every value exactly; parameters and statistics stay
// plain f32 whatever the activations' layout, so checkpoints are written from the same tensors as on
// the CPU.
#include <catch2/catch.hpp>
#include <cstring>

#include "dptrain/backend/gpu_layout.hpp"
#include "dptrain/net/models/registry.hpp"
#include "gpu/gpu_testing.hpp"
#include "support/tensor_testing.hpp"

namespace dptrain {
namespace {
using testing::random_tensor;

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

TEST_CASE("activations take the layout DPTRAIN_LAYOUT gives their precision, and copies keep every value",
          "[gpu][layout]") {
  const GpuLayoutPolicy policy = gpu_layout_policy();
  for (const Precision precision : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    Backend* be = gpu_testing::gpu(precision);
    if (be == nullptr) continue;
    INFO(name_of(precision));
    const DType type = activation_dtype(precision);
    const Layout expected = uses_nhwc(policy, type) ? Layout::nhwc : Layout::plain;
    // Channels and pixels that are no multiple of a transpose tile, and more than one tile of each.
    for (const Shape& shape : {Shape{2, 5, 3, 7}, Shape{3, 40, 6, 9}, Shape{1, 3, 1, 1}, Shape{2, 64, 35, 1}}) {
      INFO(shape.to_string());
      Tensor t = be->allocate_activation(shape);
      CHECK(t.layout() == expected);
      CHECK(be->activation_layout(shape) == expected);
      CHECK(be->allocate_input(shape).layout() == expected);
      CHECK(be->allocate_activation(Shape{shape[0], shape.per_sample()}).layout() == Layout::plain);
      const Tensor values = gpu_testing::in_16_bits(random_tensor(shape, 91, -3.f, 3.f));
      be->copy_from_host(values, t);
      CHECK(same_bits(be->to_host(t), values));
      // Into a plain tensor of the activation type and back into the activation layout.
      Tensor plain = be->allocate(shape, type);
      be->copy(t, plain);
      CHECK(same_bits(be->to_host(plain), values));
      Tensor again = be->allocate_activation(shape);
      be->copy(plain, again);
      CHECK(same_bits(be->to_host(again), values));
      // Widened into f32 plain while changing layout, in one pass.
      Tensor wide = be->allocate(shape, DType::f32);
      be->copy(t, wide);
      CHECK(same_bits(be->to_host(wide), values));
      // A sample's slice of an NHWC tensor is that sample.
      CHECK(same_bits(be->to_host(t.slice_samples(shape[0] - 1, 1)), values.slice_samples(shape[0] - 1, 1)));
      if (expected == Layout::nhwc && shape[2] * shape[3] > 1) {
        // Element-wise ops refuse tensors whose memory orders differ.
        CHECK_THROWS_WITH(be->add(t, plain, again), Catch::Contains("different layouts"));
      }
    }
  }
}

TEST_CASE("parameters and batch-norm statistics stay plain f32 in every layout", "[gpu][layout]") {
  for (const Precision precision : {Precision::fp32, Precision::bf16}) {
    Backend* be = gpu_testing::gpu(precision);
    if (be == nullptr) continue;
    INFO(name_of(precision));
    ModelConfig config;
    config.batch = 2;
    config.classes = 10;
    auto net = build_model("inception-mini", *be, config);
    net->initialize(5);
    auto cpu_net = build_model("inception-mini", gpu_testing::cpu(), config);
    cpu_net->initialize(5);
    const auto gpu_parameters = net->parameters();
    const auto cpu_parameters = cpu_net->parameters();
    REQUIRE(gpu_parameters.size() == cpu_parameters.size());
    for (std::size_t i = 0; i < gpu_parameters.size(); ++i) {
      INFO(gpu_parameters[i]->name);
      CHECK(gpu_parameters[i]->value.layout() == Layout::plain);
      CHECK(gpu_parameters[i]->value.dtype() == DType::f32);
      CHECK(gpu_parameters[i]->grad.layout() == Layout::plain);
      // The same initial weights, in the same order of elements, as the CPU's (what a checkpoint holds).
      CHECK(same_bits(be->to_host(gpu_parameters[i]->value), cpu_parameters[i]->value));
    }
    for (Buffer* b : net->buffers()) {
      INFO(b->name);
      CHECK(b->value.layout() == Layout::plain);
      CHECK(b->value.dtype() == DType::f32);
    }
    CHECK(net->images().layout() == be->activation_layout(net->images().shape()));
  }
}
}  // namespace
}  // namespace dptrain
