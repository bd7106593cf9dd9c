// Backend::sgd_update_all: every parameter in one pass, each element computed exactly as the
// per-element formula computes it for that parameter alone (the same bits: training is unchanged).
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "dptrain/backend/backend.hpp"
#include "dptrain/net/models/registry.hpp"
#include "support/tensor_testing.hpp"

using namespace dptrain;

namespace {
// The reference: one parameter, one element after another, the formula as Backend documents it.
void reference_step(Tensor& w, const Tensor& g, Tensor& v, float lr, float m, float wd, bool nesterov) {
  float *pw = w.data<float>(), *pv = v.data<float>();
  const float* pg = g.data<float>();
  for (std::int64_t i = 0; i < w.numel(); ++i) {
    const float decayed = pg[i] + wd * pw[i];
    pv[i] = m * pv[i] + decayed;
    pw[i] -= lr * (nesterov ? decayed + m * pv[i] : pv[i]);
  }
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}
}  // namespace

TEST_CASE("sgd_update_all gives the bits of the per-element formula applied per tensor", "[backend][sgd]") {
  auto backend = make_cpu_backend();
  // Sizes around vector widths (1, 3, 7, 8, 17), and above the threshold where the CPU's loops go
  // parallel (1 << 15) and the pieces they are cut into; the decay 0 on every other tensor.
  const std::vector<std::int64_t> sizes = {1, 3, 7, 8, 17, 1000, 40000, 65537, 5};
  for (const bool nesterov : {false, true}) {
    INFO("nesterov " << nesterov);
    std::vector<Tensor> w, g, v, ref_w, ref_v;
    std::vector<float> decay;
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      w.push_back(testing::random_tensor(Shape{sizes[t]}, 100 + t));
      v.push_back(testing::random_tensor(Shape{sizes[t]}, 200 + t, -0.1f, 0.1f));
      g.push_back(Tensor::empty(Shape{sizes[t]}));
      ref_w.push_back(testing::copy_of(w.back()));
      ref_v.push_back(testing::copy_of(v.back()));
      decay.push_back(t % 2 ? 0.f : 5e-4f * static_cast<float>(t + 1));
    }
    std::vector<SgdTensors> list;
    for (std::size_t t = 0; t < sizes.size(); ++t) list.push_back({&w[t], &g[t], &v[t], decay[t]});
    for (int step = 0; step < 4; ++step) {
      const float lr = 0.1f / static_cast<float>(step + 1), momentum = 0.9f;
      for (std::size_t t = 0; t < sizes.size(); ++t) {
        g[t] = testing::random_tensor(Shape{sizes[t]}, 1000 * static_cast<std::uint64_t>(step) + t);
        reference_step(ref_w[t], g[t], ref_v[t], lr, momentum, decay[t], nesterov);
      }
      backend->sgd_update_all(list, SgdHyper{lr, momentum, nesterov});
      for (std::size_t t = 0; t < sizes.size(); ++t) {
        INFO("step " << step << ", tensor " << t << " of " << sizes[t] << " elements");
        CHECK(same_bits(w[t], ref_w[t]));
        CHECK(same_bits(v[t], ref_v[t]));
      }
    }
  }
}

TEST_CASE("sgd_update_all refuses a parameter whose tensors differ in size", "[backend][sgd]") {
  auto backend = make_cpu_backend();
  Tensor w = Tensor::zeros(Shape{2}), g = Tensor::zeros(Shape{1}), v = Tensor::zeros(Shape{2});
  w.data<float>()[0] = 1.f;
  const SgdTensors list[] = {{&w, &g, &v, 0.f}};
  CHECK_THROWS_WITH(backend->sgd_update_all(list, SgdHyper{}), Catch::Contains("sgd_update_all"));
  CHECK(w.data<float>()[0] == 1.f);  // checked before anything is written
}

// Hidden (run with "[.timing]"): a model's parameters updated with one call per parameter (the call
// pattern sgd_update_all replaced) and with one call for all, alternated.
TEST_CASE("sgd_update_all timing: one call against one call per parameter", "[.timing]") {
  auto backend = make_cpu_backend();
  for (const char* model : {"lenet", "googlenet", "resnet50"}) {
    ModelConfig config;
    config.channels = std::string(model) == "lenet" ? 1 : 3;
    config.classes = std::string(model) == "lenet" ? 10 : 1000;
    auto net = build_model(model, *backend, config);
    net->initialize(7);
    const std::vector<Parameter*> parameters = net->parameters();
    std::vector<Tensor> velocity;
    std::vector<SgdTensors> list;
    for (Parameter* p : parameters) velocity.push_back(Tensor::zeros(p->value.shape()));
    for (std::size_t i = 0; i < velocity.size(); ++i) {
      Parameter& p = *parameters[i];
      p.grad = testing::random_tensor(p.value.shape(), i, -1e-3f, 1e-3f);
      list.push_back({&p.value, &p.grad, &velocity[i], 1e-4f});
    }
    const SgdHyper hyper{1e-3f, 0.9f, false};
    constexpr int kSteps = 20;
    const auto time_ms = [&](bool one_call) {
      const auto start = std::chrono::steady_clock::now();
      for (int s = 0; s < kSteps; ++s) {
        if (one_call) {
          backend->sgd_update_all(list, hyper);
        } else {
          for (const SgdTensors& p : list) backend->sgd_update_all(std::span(&p, 1), hyper);
        }
      }
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / kSteps;
    };
    for (int round = 0; round < 3; ++round) {
      const double per_parameter = time_ms(false), one_call = time_ms(true);
      std::printf("%s (%zu tensors): per parameter %.3f ms, one call %.3f ms\n", model, list.size(), per_parameter,
                  one_call);
    }
  }
}
