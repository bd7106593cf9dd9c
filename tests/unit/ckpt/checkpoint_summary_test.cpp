// What `dptrain inspect CKPT` reports: the progress fields and per-tensor statistics.
#include "dptrain/ckpt/checkpoint_summary.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ckpt_testing.hpp"
#include "dptrain/ckpt/tensor_statistics.hpp"

using namespace dptrain;

TEST_CASE("tensor statistics: count, mean, std, min, max, L2 norm", "[ckpt]") {
  Tensor t = Tensor::empty(Shape{2, 2});
  const float values[4] = {1.f, -3.f, 5.f, 1.f};
  std::copy(values, values + 4, t.data<float>());
  const ckpt::TensorStatistics s = ckpt::tensor_statistics(t);
  CHECK(s.count == 4);
  CHECK(s.mean == Approx(1.0));
  CHECK(s.std == Approx(std::sqrt(8.0)));  // deviations 0, -4, 4, 0
  CHECK(s.min == -3);
  CHECK(s.max == 5);
  CHECK(s.l2_norm == Approx(6.0));
  // A large mean with a small spread (batch-norm variances) keeps its spread.
  Tensor v = Tensor::empty(Shape{2});
  v.data<float>()[0] = 10000.5f;
  v.data<float>()[1] = 10001.5f;
  CHECK(ckpt::tensor_statistics(v).std == Approx(0.5));
  CHECK(ckpt::tensor_statistics(Tensor::empty(Shape{0})).count == 0);
}

TEST_CASE("the checkpoint summary holds the progress, the configuration and every tensor", "[ckpt]") {
  ckpt::TrainingState state = testing::synthetic_state(700, 2, 10);
  state.source = "/x/ckpt-000000700.h5";
  state.progress.world_size = 4;
  state.parameters[0].value.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();  // a diverged run
  const nlohmann::json j = ckpt::checkpoint_summary(state, 12345);
  CHECK(j["path"] == "/x/ckpt-000000700.h5");
  CHECK(j["bytes"] == 12345);
  CHECK(j["model"] == "synthetic");
  CHECK(j["step"] == 700);
  CHECK(j["epoch"] == 7);
  CHECK(j["world_size"] == 4);
  CHECK(j["global_batch"] == 32);
  CHECK(j["configuration"]["model"] == "synthetic");  // embedded as JSON, not as a string
  CHECK(j["learning_rate"]["schedule"] == "step");
  CHECK(j["optimizer"]["momentum"] == 0.9);  // the value typed, not float noise
  CHECK(j["optimizer"]["weight_decay"] == 1e-4);
  REQUIRE(j["parameters"].size() == 2);
  CHECK(j["parameters"][1]["name"] == "layer1/weight");
  CHECK(j["parameters"][1]["shape"] == nlohmann::json::array({10}));
  CHECK(j["parameters"][1]["count"] == 10);
  CHECK(j["momentum"].size() == 2);
  CHECK(j["buffers"][0]["name"] == "bn/running_mean");
  CHECK(j.dump().find("\"mean\":null") != std::string::npos);  // NaN stays visible, as null
  state.configuration = "not json";
  CHECK(ckpt::checkpoint_summary(state, 1)["configuration"] == "not json");
}
