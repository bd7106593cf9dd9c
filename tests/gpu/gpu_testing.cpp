#include "gpu/gpu_testing.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <map>

#include "support/tensor_testing.hpp"

namespace dptrain::gpu_testing {

Tensor on(Backend& backend, const Tensor& host) {
  Tensor t = backend.allocate(host.shape(), host.dtype());
  backend.copy_from_host(host, t);
  return t;
}

Tensor activation(Backend& backend, const Shape& shape) {
  return backend.allocate(shape, activation_dtype(backend.precision()));
}

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

void expect_agreement_in(std::initializer_list<Precision> precisions, const Run& run,
                         const std::vector<std::string>& names, double low_tolerance) {
  for (Precision precision : precisions) {
    if (precision == Precision::fp32) {
      compare(run, names, gpu(), 1e-4, false);
      continue;
    }
    Backend* backend = gpu(precision);
    if (backend == nullptr) {
      WARN("this GPU has no " << name_of(precision) << ": not compared");
      continue;
    }
    compare(run, names, *backend, low_tolerance, true);
  }
}

void expect_agreement_in_all_precisions(const Run& run, const std::vector<std::string>& names, double low_tolerance) {
  expect_agreement_in({Precision::fp32, Precision::bf16, Precision::fp16}, run, names, low_tolerance);
}

void print_worst_agreement() {
  for (const auto& [precision, worst] : worst_errors()) {
    std::printf("agreement %s: nearest its tolerance: error %.2e (tolerance %.1e) in %s\n", precision.c_str(),
                worst.error, worst.tolerance, worst.where.c_str());
  }
}

}  // namespace dptrain::gpu_testing
