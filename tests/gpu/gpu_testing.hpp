#pragma once
// Shared by the GPU tests: run the same ops on the CPU and the CUDA backend from the same host inputs
// and compare what comes back. main() (gpu_main.cpp) exits 77 (CTest: skipped) without a usable GPU.
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "dptrain/backend/backend.hpp"

namespace dptrain::gpu_testing {

// The two backends under comparison, made once by main.
Backend& cpu();
Backend& gpu();

// A copy of host tensor `host` in `backend`'s memory.
Tensor on(Backend& backend, const Tensor& host);
// Host copies of backend tensors, in order.
std::vector<Tensor> to_host(Backend& backend, std::initializer_list<const Tensor*> tensors);

// Runs `run` on both backends and checks that result i agrees to `tolerance` relative error
// (relative to the CPU result's largest magnitude), naming each result in a failure.
using Run = std::function<std::vector<Tensor>(Backend&)>;
void expect_agreement(const Run& run, const std::vector<std::string>& names, double tolerance = 1e-4);

}  // namespace dptrain::gpu_testing
