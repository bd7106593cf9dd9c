#pragma once
// Shared by the GPU tests: run the same ops on the CPU and the CUDA backend from the same host inputs
// and compare what comes back. main() (gpu_main.cpp) exits 77 (CTest: skipped) without a usable GPU.
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "dptrain/backend/backend.hpp"
#include "support/op_cases.hpp"

namespace dptrain::gpu_testing {

// The two backends under comparison, made once by main.
Backend& cpu();
Backend& gpu();
// The CUDA backend in `precision` (made on first use), or nullptr where this GPU lacks it (bf16 before
// compute capability 8.0).
Backend* gpu(Precision precision);

// A copy of host tensor `host` in `backend`'s memory.
Tensor on(Backend& backend, const Tensor& host);
// An activation of `backend`'s activation type (f32 on the CPU, bf16/f16 on a low-precision GPU
// backend), in its activation layout (NHWC on a 16-bit GPU); and one holding host f32 tensor `host`
// (converted and transposed on the device).
Tensor activation(Backend& backend, const Shape& shape);
Tensor on_activation(Backend& backend, const Tensor& host);
// Host copies of backend tensors, in order (bf16/f16 come back as f32).
std::vector<Tensor> to_host(Backend& backend, std::initializer_list<const Tensor*> tensors);

// Runs `run` on both backends and checks that result i agrees to `tolerance` relative error
// (relative to the CPU result's largest magnitude), naming each result in a failure.
using Run = std::function<std::vector<Tensor>(Backend&)>;
void expect_agreement(const Run& run, const std::vector<std::string>& names, double tolerance = 1e-4);

// ||actual - reference||_2 / max(||reference||_2, floor): the error of a low-precision result as a
// whole, where single elements may lose a 16-bit rounding each.
double norm_relative_error(const Tensor& actual, const Tensor& reference, double floor = 1e-12);

// The CPU backend (fp32, the reference) against the CUDA backend in each of `precisions`: fp32 to 1e-4
// with the max-element relative error above, bf16 and fp16 to `low_tolerance` in norm_relative_error.
// A precision the GPU lacks is reported and left out.
void expect_agreement_in(std::initializer_list<Precision> precisions, const Run& run,
                         const std::vector<std::string>& names, double low_tolerance = 1e-2);
// The same in fp32, bf16 and fp16.
void expect_agreement_in_all_precisions(const Run& run, const std::vector<std::string>& names,
                                        double low_tolerance = 1e-2);
// The same with each precision's bound from `tolerance` (an op case's).
void expect_agreement_in_all_precisions(const Run& run, const std::vector<std::string>& names,
                                        const testing::Tolerance& tolerance);

// `t` with every value rounded to the nearest bf16 (ties to even), as f32: a value that bf16 and fp16
// (in its range) both represent exactly, so that every precision computes from the same inputs.
Tensor in_16_bits(const Tensor& t);

// Records a comparison's error for print_worst_agreement (expect_agreement* call it themselves).
void note_error(Precision precision, double error, double tolerance, const std::string& what);

// One line per precision compared: the error nearest its tolerance, that tolerance and the test and
// result it was met in ("agreement bf16: nearest its tolerance: error 3.1e-03 (tolerance 1.0e-02) in ...").
void print_worst_agreement();

// Waits until the backend's compute stream has done everything queued so far (to_host waits for it).
void finish_compute(Backend& be, const Tensor& any);

// Delays on the backend's compute stream. The backend does not hand out its stream, so work queued
// through its own ops is the only way to make that stream late, as a backward pass makes it: SGEMMs
// of 4096^3 (a few ms each on a current GPU), as many as a calibration says `milliseconds` take.
class ComputeDelay {
 public:
  explicit ComputeDelay(Backend& be);
  // Queues at least `milliseconds` of GEMMs; returns how many.
  int queue(double milliseconds);
  double milliseconds_per_gemm() const { return milliseconds_per_gemm_; }

 private:
  static constexpr std::int64_t kSide = 4096;
  void gemm() { plan_->forward(x_, w_, b_, y_); }

  Backend& be_;
  std::unique_ptr<LinearPlan> plan_;
  Tensor x_, w_, b_, y_;
  double milliseconds_per_gemm_ = 1;
};

}  // namespace dptrain::gpu_testing
