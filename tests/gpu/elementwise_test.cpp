// The element-wise ops move 16 bytes a thread where the tensors' addresses allow and one element a
// thread otherwise (lib/dptrain/backend/cuda/vector_access.cuh), with a tail one element at a time.
// Every path must compute each element as the others do: the same ops on tensors that start on a
// 16-byte boundary and one element past it, of a length that leaves a tail, give the same bits, and
// agree with the CPU backend.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/gpu_testing.hpp"
#include "support/tensor_testing.hpp"

namespace dptrain {
namespace {
using gpu_testing::on_activation;
using testing::random_tensor;

// Activation-type tensors of `shape` in `be` (in its activation layout), starting `shift` elements past
// a 256-byte boundary.
struct Placed {
  Tensor storage;
  std::vector<Tensor> views;
  Placed(Backend& be, const Shape& shape, int count, int shift) {
    const DType type = activation_dtype(be.precision());
    const std::size_t stride = (static_cast<std::size_t>(shape.numel()) * size_of(type) + 511) / 256 * 256;
    storage = be.allocate(Shape{static_cast<std::int64_t>(stride * static_cast<std::size_t>(count))}, DType::u8);
    for (int i = 0; i < count; ++i) {
      views.push_back(
          storage.view_bytes(stride * static_cast<std::size_t>(i) + static_cast<std::size_t>(shift) * size_of(type),
                             shape, type, be.activation_layout(shape)));
    }
  }
};

// fill, add, add_relu, axpby (beta 0 and not), ReLU forward and backward, and f32 <-> activation
// copies, on tensors `shift` elements off alignment; host copies of every result.
std::vector<Tensor> run_ops(Backend& be, const Shape& shape, int shift) {
  const Tensor a = random_tensor(shape, 71, -2.f, 2.f), b = random_tensor(shape, 72, -2.f, 2.f);
  Placed t(be, shape, 8, shift);
  be.copy_from_host(gpu_testing::in_16_bits(a), t.views[0]);
  be.copy_from_host(gpu_testing::in_16_bits(b), t.views[1]);
  be.fill(t.views[2], 0.375f);
  be.add(t.views[0], t.views[1], t.views[3]);
  be.add_relu(t.views[0], t.views[1], t.views[4]);
  be.copy(t.views[1], t.views[5]);
  be.axpby(0.5f, t.views[0], 2.f, t.views[5]);
  be.fill(t.views[6], 7.f);  // beta 0 overwrites it (on a GPU even NaN; the CPU computes 0 * y)
  be.axpby(-1.5f, t.views[1], 0.f, t.views[6]);
  auto relu = be.make_relu(shape);
  relu->forward(t.views[0], t.views[7]);
  Tensor dx = t.views[2];  // the fill is read already: overwrite it with the ReLU's input gradient
  std::vector<Tensor> out =
      gpu_testing::to_host(be, {&t.views[2], &t.views[3], &t.views[4], &t.views[5], &t.views[6], &t.views[7]});
  relu->backward(t.views[7], t.views[1], dx);
  out.push_back(gpu_testing::to_host(be, {&dx})[0]);
  return out;
}

const std::vector<std::string> kNames = {"fill", "add", "add_relu", "axpby", "axpby beta 0", "relu", "relu backward"};
}  // namespace

TEST_CASE("element-wise ops give the same bits aligned, unaligned and in the tail, and agree with the CPU",
          "[gpu][elementwise]") {
  const Shape shape{3, 5, 7, 9};  // 945 elements: vectors of 8, 4 or 2 leave a tail
  for (const Precision precision : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    Backend* gpu = gpu_testing::gpu(precision);
    if (gpu == nullptr) continue;
    INFO(name_of(precision));
    const std::vector<Tensor> aligned = run_ops(*gpu, shape, 0), shifted = run_ops(*gpu, shape, 1);
    REQUIRE(aligned.size() == kNames.size());
    for (std::size_t i = 0; i < aligned.size(); ++i) {
      INFO(kNames[i]);
      CHECK(std::memcmp(aligned[i].raw(), shifted[i].raw(), aligned[i].bytes()) == 0);
    }
  }
  gpu_testing::expect_agreement_in_all_precisions(
      [&](Backend& be) { return run_ops(be, shape, be.device().is_cpu() ? 0 : 1); }, kNames);
}

}  // namespace dptrain
