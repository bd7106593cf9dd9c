// A zoo model's gradient buckets for the scaling model: every parameter in exactly one bucket, the
// buckets ready in order, the last (the first layers) at the end of the backward pass.
#include "dptrain/train/gradient_timing.hpp"

#include <catch2/catch.hpp>

#include "dptrain/backend/backend.hpp"
#include "dptrain/net/models/registry.hpp"

using namespace dptrain;

TEST_CASE("a model's gradient buckets hold all its parameters and become ready in order", "[train][predict]") {
  auto backend = make_cpu_backend();
  ModelConfig config;
  config.memory.allocate = false;
  const std::string model = GENERATE(as<std::string>{}, "lenet", "googlenet", "resnet50");
  auto net = build_model(model, *backend, config);
  for (const std::size_t bucket_mb : {1u, 25u, 1000u}) {
    const auto buckets = gradient_timing(*net, bucket_mb << 20);
    REQUIRE_FALSE(buckets.empty());
    double bytes = 0, previous = 0;
    for (const auto& b : buckets) {
      bytes += b.bytes;
      CHECK(b.ready_fraction >= previous);
      CHECK(b.ready_fraction <= 1.0);
      previous = b.ready_fraction;
    }
    CHECK(bytes == static_cast<double>(net->parameter_count()) * 4);
    CHECK(buckets.back().ready_fraction == Catch::Detail::Approx(1.0));
    if (bucket_mb == 1000) CHECK(buckets.size() == 1);
  }
}
