#include "gpu/gpu_testing.hpp"

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>

#include "support/tensor_testing.hpp"

namespace dptrain::gpu_testing {

Tensor on(Backend& backend, const Tensor& host) {
  Tensor t = backend.allocate(host.shape(), host.dtype());
  backend.copy_from_host(host, t);
  return t;
}

Tensor activation(Backend& backend, const Shape& shape) { return backend.allocate_activation(shape); }

Tensor on_activation(Backend& backend, const Tensor& host) {
  Tensor t = activation(backend, host.shape());
  backend.copy_from_host(host, t);
  return t;
}

std::vector<Tensor> to_host(Backend& backend, std::initializer_list<const Tensor*> tensors) {
  std::vector<Tensor> out;
  for (const Tensor* t : tensors) out.push_back(backend.to_host(*t));
  return out;
}

namespace {
// The error nearest its tolerance met in each precision, and where: gpu-check's table shows it.
struct Worst {
  double error = 0, tolerance = 1;
  std::string where;
};
std::map<std::string, Worst>& worst_errors() {
  static std::map<std::string, Worst> worst;
  return worst;
}

void compare(const Run& run, const std::vector<std::string>& names, Backend& other, double tolerance, bool by_norm) {
  const std::vector<Tensor> reference = run(cpu());
  const std::vector<Tensor> actual = run(other);
  REQUIRE(reference.size() == names.size());
  REQUIRE(actual.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    INFO(names[i] << " on " << other.name() << ": CPU shape " << reference[i].shape().to_string() << ", GPU shape "
                  << actual[i].shape().to_string());
    REQUIRE(actual[i].shape() == reference[i].shape());
    const double error =
        by_norm ? norm_relative_error(actual[i], reference[i]) : testing::relative_error(actual[i], reference[i]);
    INFO((by_norm ? "norm-relative error " : "relative error ") << error);
    CHECK(error <= tolerance);
    note_error(other.precision(), error, tolerance, names[i]);
  }
}
}  // namespace

void note_error(Precision precision, double error, double tolerance, const std::string& what) {
  Worst& worst = worst_errors()[std::string(name_of(precision))];
  if (!(error / tolerance <= worst.error / worst.tolerance)) {  // a NaN error is the worst of all
    worst = {error, tolerance, Catch::getResultCapture().getCurrentTestName() + ": " + what};
  }
}

void expect_agreement(const Run& run, const std::vector<std::string>& names, double tolerance) {
  compare(run, names, gpu(), tolerance, false);
}

double norm_relative_error(const Tensor& actual, const Tensor& reference, double floor) {
  const std::vector<double> a = testing::to_double(actual), b = testing::to_double(reference);
  REQUIRE(a.size() == b.size());
  double difference = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference += (a[i] - b[i]) * (a[i] - b[i]);
    scale += b[i] * b[i];
  }
  return std::sqrt(difference) / std::max(std::sqrt(scale), floor);
}

namespace {
void compare_in(std::initializer_list<Precision> precisions, const Run& run, const std::vector<std::string>& names,
                const testing::Tolerance& tolerance) {
  for (Precision precision : precisions) {
    if (precision == Precision::fp32) {
      compare(run, names, gpu(), tolerance.fp32, false);
      continue;
    }
    Backend* backend = gpu(precision);
    if (backend == nullptr) {
      WARN("this GPU has no " << name_of(precision) << ": not compared");
      continue;
    }
    compare(run, names, *backend, precision == Precision::bf16 ? tolerance.bf16 : tolerance.fp16, true);
  }
}
}  // namespace

void expect_agreement_in(std::initializer_list<Precision> precisions, const Run& run,
                         const std::vector<std::string>& names, double low_tolerance) {
  compare_in(precisions, run, names, testing::Tolerance{1e-4, low_tolerance, low_tolerance});
}

void expect_agreement_in_all_precisions(const Run& run, const std::vector<std::string>& names, double low_tolerance) {
  expect_agreement_in({Precision::fp32, Precision::bf16, Precision::fp16}, run, names, low_tolerance);
}

void expect_agreement_in_all_precisions(const Run& run, const std::vector<std::string>& names,
                                        const testing::Tolerance& tolerance) {
  compare_in({Precision::fp32, Precision::bf16, Precision::fp16}, run, names, tolerance);
}

Tensor in_16_bits(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape());
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const auto bits = std::bit_cast<std::uint32_t>(t.data<float>()[i]);
    const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
    out.data<float>()[i] = std::bit_cast<float>(rounded);
  }
  return out;
}

void print_worst_agreement() {
  for (const auto& [precision, worst] : worst_errors()) {
    std::printf("agreement %s: nearest its tolerance: error %.2e (tolerance %.1e) in %s\n", precision.c_str(),
                worst.error, worst.tolerance, worst.where.c_str());
  }
}

void finish_compute(Backend& be, const Tensor& any) { (void)be.to_host(any.slice_samples(0, 1)); }

ComputeDelay::ComputeDelay(Backend& be) : be_(be) {
  LinearSpec spec;
  spec.input = Shape{kSide, kSide};
  spec.out_features = static_cast<int>(kSide);
  plan_ = be.make_linear(spec);
  x_ = be.allocate(spec.input);
  w_ = be.allocate(linear_weight_shape(spec));
  b_ = be.allocate(Shape{kSide});
  y_ = be.allocate(Shape{kSide, kSide});
  be.fill(x_, 0.5f);
  be.fill(w_, 0.25f);
  be.fill(b_, 0.f);
  gemm();  // cuBLAS's first call loads its kernels
  finish_compute(be_, b_);
  constexpr int kTimed = 5;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kTimed; ++i) gemm();
  finish_compute(be_, b_);
  milliseconds_per_gemm_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / kTimed;
}

int ComputeDelay::queue(double milliseconds) {
  const int gemms = std::max(1, static_cast<int>(std::ceil(milliseconds / milliseconds_per_gemm_)));
  for (int i = 0; i < gemms; ++i) gemm();
  return gemms;
}

}  // namespace dptrain::gpu_testing
