// The CUDA backend's SGD step over all parameters in one launch (backend/cuda/sgd_table.hpp) against
// the CPU backend's, over many tensors of odd sizes and several steps; the same bits whether a
// parameter's addresses allow 16-byte vectors or not; and the table rebuilt, and right, when another
// list of parameters is passed.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "dptrain/backend/cuda/cuda_backend.hpp"
#include "gpu/gpu_testing.hpp"
#include "support/tensor_testing.hpp"

namespace dptrain {
namespace {
using gpu_testing::on;
using testing::random_tensor;

// Around the kernel's chunk of 4096 elements and its vectors of 4: tails of 1 to 3, a tensor of one
// element, chunks that end a tensor exactly and one past it.
const std::vector<std::int64_t> kSizes = {1, 3, 5, 17, 255, 4095, 4096, 4097, 12289, 100003, 2, 64};

float decay_of(std::size_t t) { return t % 3 == 0 ? 0.f : 1e-3f * static_cast<float>(t); }

// Parameters of kSizes in `be`, `shift` floats past a 256-byte boundary (views into one buffer).
struct Parameters {
  Tensor storage;
  std::vector<Tensor> w, g, v;
  Parameters(Backend& be, int shift) {
    std::size_t offset = 0;
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < 3 * kSizes.size(); ++i) {
      at.push_back(offset + static_cast<std::size_t>(shift) * sizeof(float));
      offset += (static_cast<std::size_t>(kSizes[i % kSizes.size()]) * sizeof(float) + 511) / 256 * 256;
    }
    storage = be.allocate(Shape{static_cast<std::int64_t>(offset)}, DType::u8);
    for (std::size_t t = 0; t < kSizes.size(); ++t) {
      const Shape shape{kSizes[t]};
      w.push_back(storage.view_bytes(at[t], shape, DType::f32, Layout::plain));
      g.push_back(storage.view_bytes(at[kSizes.size() + t], shape, DType::f32, Layout::plain));
      v.push_back(storage.view_bytes(at[2 * kSizes.size() + t], shape, DType::f32, Layout::plain));
      be.copy_from_host(random_tensor(shape, 300 + t), w[t]);
      be.copy_from_host(random_tensor(shape, 400 + t, -0.1f, 0.1f), v[t]);
    }
  }
  // The update list of the tensors `which`.
  std::vector<SgdTensors> list(const std::vector<std::size_t>& which) {
    std::vector<SgdTensors> out;
    for (std::size_t t : which) out.push_back({&w[t], &g[t], &v[t], decay_of(t)});
    return out;
  }
  std::vector<Tensor> to_host(Backend& be) {
    std::vector<Tensor> out;
    for (std::size_t t = 0; t < kSizes.size(); ++t) {
      out.push_back(be.to_host(w[t]));
      out.push_back(be.to_host(v[t]));
    }
    return out;
  }
};

// Steps on the tensors `which`, each with fresh gradients.
void steps(Backend& be, Parameters& p, const std::vector<std::size_t>& which, int count, bool nesterov, int seed) {
  const std::vector<SgdTensors> list = p.list(which);
  for (int s = 0; s < count; ++s) {
    for (std::size_t t : which) be.copy_from_host(random_tensor(Shape{kSizes[t]}, 10000 * (seed + s) + t), p.g[t]);
    be.sgd_update_all(list, SgdHyper{0.1f / static_cast<float>(s + 1), 0.9f, nesterov});
  }
}

std::vector<std::size_t> all_tensors() {
  std::vector<std::size_t> all;
  for (std::size_t t = 0; t < kSizes.size(); ++t) all.push_back(t);
  return all;
}

std::vector<std::string> result_names() {
  std::vector<std::string> names;
  for (std::int64_t size : kSizes) {
    names.push_back("weight of " + std::to_string(size));
    names.push_back("momentum of " + std::to_string(size));
  }
  return names;
}
}  // namespace

TEST_CASE("sgd_update_all: one launch agrees with the CPU over many tensors and steps", "[gpu][sgd]") {
  for (const bool nesterov : {false, true}) {
    INFO("nesterov " << nesterov);
    gpu_testing::expect_agreement(
        [&](Backend& be) {
          Parameters p(be, be.device().is_cpu() ? 0 : 1);
          steps(be, p, all_tensors(), 3, nesterov, 1);
          return p.to_host(be);
        },
        result_names());
  }
}

TEST_CASE("sgd_update_all gives the same bits with 16-byte vectors and without", "[gpu][sgd]") {
  Backend& gpu = gpu_testing::gpu();
  Parameters aligned(gpu, 0), shifted(gpu, 1);
  steps(gpu, aligned, all_tensors(), 3, true, 2);
  steps(gpu, shifted, all_tensors(), 3, true, 2);
  const std::vector<Tensor> a = aligned.to_host(gpu), b = shifted.to_host(gpu);
  const std::vector<std::string> names = result_names();
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(names[i]);
    CHECK(std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) == 0);
  }
}

TEST_CASE("sgd_update_all rebuilds its table for another list and keeps updating right", "[gpu][sgd]") {
  const std::vector<std::size_t> first = {0, 2, 5, 9, 10}, second = {9, 1, 3, 6, 7, 8, 11};
  gpu_testing::expect_agreement(
      [&](Backend& be) {
        Parameters p(be, 0);
        const std::int64_t builds = be.device().is_cpu() ? 0 : cuda::sgd_table_builds(be);
        steps(be, p, first, 2, false, 3);  // built once, then kept
        steps(be, p, second, 2, true, 5);  // another list (more tensors, larger): rebuilt
        steps(be, p, first, 1, false, 7);  // back to the first (a smaller table in the same buffer)
        if (!be.device().is_cpu()) CHECK(cuda::sgd_table_builds(be) - builds == 3);
        return p.to_host(be);  // tensor 4 is in neither list: untouched on both
      },
      result_names());
}

}  // namespace dptrain
