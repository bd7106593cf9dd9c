#include "gpu/gpu_testing.hpp"

#include <catch2/catch.hpp>

#include "support/tensor_testing.hpp"

namespace dptrain::gpu_testing {

Tensor on(Backend& backend, const Tensor& host) {
  Tensor t = backend.allocate(host.shape(), host.dtype());
  backend.copy_from_host(host, t);
  return t;
}

std::vector<Tensor> to_host(Backend& backend, std::initializer_list<const Tensor*> tensors) {
  std::vector<Tensor> out;
  for (const Tensor* t : tensors) out.push_back(backend.to_host(*t));
  return out;
}

void expect_agreement(const Run& run, const std::vector<std::string>& names, double tolerance) {
  const std::vector<Tensor> reference = run(cpu());
  const std::vector<Tensor> actual = run(gpu());
  REQUIRE(reference.size() == names.size());
  REQUIRE(actual.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    INFO(names[i] << ": CPU shape " << reference[i].shape().to_string() << ", GPU shape "
                  << actual[i].shape().to_string());
    REQUIRE(actual[i].shape() == reference[i].shape());
    const double error = testing::relative_error(actual[i], reference[i]);
    INFO("relative error " << error);
    CHECK(error <= tolerance);
  }
}

}  // namespace dptrain::gpu_testing
