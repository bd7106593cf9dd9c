#include "dptrain/optim/sgd.hpp"

#include <catch2/catch.hpp>

using namespace dptrain;

TEST_CASE("Sgd decays weights but not biases and batch-norm parameters unless asked", "[optim][sgd]") {
  auto backend = make_cpu_backend();
  Parameter weight{"fc/weight", Tensor::zeros(Shape{1}), Tensor::zeros(Shape{1}), true};
  Parameter bias{"fc/bias", Tensor::zeros(Shape{1}), Tensor::zeros(Shape{1}), false};
  weight.value.data<float>()[0] = 2.f;
  bias.value.data<float>()[0] = 2.f;
  Sgd sgd(*backend, {&weight, &bias}, SgdConfig{0.f, 0.5f, false, false});
  sgd.step(0.1f);  // zero gradients: only decay moves the weight
  CHECK(weight.value.data<float>()[0] == Approx(2.f - 0.1f * 0.5f * 2.f));
  CHECK(bias.value.data<float>()[0] == 2.f);
  REQUIRE(sgd.momentum_buffers().size() == 2);
  CHECK(sgd.momentum_buffers()[1].name == "fc/bias/momentum");

  Sgd all(*backend, {&bias}, SgdConfig{0.f, 0.5f, false, true});
  all.step(0.1f);
  CHECK(bias.value.data<float>()[0] == Approx(1.9f));
}

TEST_CASE("Sgd momentum accumulates over steps", "[optim][sgd]") {
  auto backend = make_cpu_backend();
  Parameter w{"w", Tensor::zeros(Shape{1}), Tensor::zeros(Shape{1}), true};
  w.grad.data<float>()[0] = 1.f;
  Sgd sgd(*backend, {&w}, SgdConfig{0.9f, 0.f, false, false});
  sgd.step(1.f);  // v = 1, w = -1
  sgd.step(1.f);  // v = 1.9, w = -2.9
  CHECK(w.value.data<float>()[0] == Approx(-2.9f));
}
