#include <catch2/catch.hpp>

#include "dptrain/backend/backend.hpp"

using namespace dptrain;

namespace {
Tensor values(std::initializer_list<float> v) {
  Tensor t = Tensor::empty(Shape{static_cast<std::int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}
}  // namespace

TEST_CASE("element-wise ops of the CPU backend", "[backend][vector]") {
  auto backend = make_cpu_backend();
  Tensor a = values({1, 2, 3}), b = values({10, 20, 30}), y = Tensor::zeros(Shape{3});
  backend->add(a, b, y);
  CHECK(std::vector<float>(y.data<float>(), y.data<float>() + 3) == std::vector<float>{11, 22, 33});
  backend->axpby(2.f, a, 0.5f, y);  // y = 2a + 0.5y
  CHECK(std::vector<float>(y.data<float>(), y.data<float>() + 3) == std::vector<float>{7.5f, 15, 22.5f});
  backend->fill(y, -1.f);
  CHECK(y.data<float>()[2] == -1.f);
  backend->copy(a, y);
  CHECK(y.data<float>()[1] == 2.f);
  Tensor wrong = Tensor::zeros(Shape{4});
  CHECK_THROWS_WITH(backend->add(a, b, wrong), Catch::Contains("[3] and [4] differ in size"));
}

TEST_CASE("sgd_update_all: momentum, weight decay and Nesterov against hand computation", "[backend][sgd]") {
  auto backend = make_cpu_backend();
  Tensor w = values({1.f, -2.f}), g = values({0.5f, 0.25f}), v = values({0.2f, 0.f});
  const SgdTensors plain[] = {{&w, &g, &v, 0.01f}};
  backend->sgd_update_all(plain, SgdHyper{0.1f, 0.9f, false});
  // g' = g + 0.01 w = {0.51, 0.23}; v = 0.9 v + g' = {0.69, 0.23}; w -= 0.1 v
  CHECK(v.data<float>()[0] == Approx(0.69f));
  CHECK(v.data<float>()[1] == Approx(0.23f));
  CHECK(w.data<float>()[0] == Approx(1.f - 0.069f));
  CHECK(w.data<float>()[1] == Approx(-2.f - 0.023f));

  Tensor w2 = values({1.f}), g2 = values({0.5f}), v2 = values({0.2f});
  const SgdTensors nesterov[] = {{&w2, &g2, &v2, 0.f}};
  backend->sgd_update_all(nesterov, SgdHyper{0.1f, 0.9f, true});
  // v = 0.9*0.2 + 0.5 = 0.68; step = g + 0.9 v = 0.5 + 0.612 = 1.112
  CHECK(v2.data<float>()[0] == Approx(0.68f));
  CHECK(w2.data<float>()[0] == Approx(1.f - 0.1112f));
}
