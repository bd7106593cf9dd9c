// DPTRAIN_BF16_BATCH_NORM is read strictly (host logic: the CUDA libraries, not a GPU).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "dptrain/backend/cuda/batch_norm_bf16.hpp"
#include "dptrain/core/error.hpp"

namespace dptrain::cuda {

TEST_CASE("DPTRAIN_BF16_BATCH_NORM: auto, native or f32, anything else an error naming the variable") {
  constexpr const char* kName = "DPTRAIN_BF16_BATCH_NORM";
  REQUIRE(::unsetenv(kName) == 0);
  CHECK(bf16_batch_norm_policy() == Bf16BatchNormPolicy::automatic);
  const struct {
    const char* text;
    Bf16BatchNormPolicy policy;
  } accepted[] = {{"", Bf16BatchNormPolicy::automatic},
                  {"auto", Bf16BatchNormPolicy::automatic},
                  {"native", Bf16BatchNormPolicy::native},
                  {"f32", Bf16BatchNormPolicy::f32_copies}};
  for (const auto& [text, policy] : accepted) {
    INFO(kName << "=\"" << text << "\"");
    REQUIRE(::setenv(kName, text, 1) == 0);
    CHECK(bf16_batch_norm_policy() == policy);
  }
  for (const char* text : {"Native", "fp32", "1", "auto ", "f32,native", "on"}) {
    INFO(kName << "=\"" << text << "\"");
    REQUIRE(::setenv(kName, text, 1) == 0);
    CHECK_THROWS_AS(bf16_batch_norm_policy(), Error);
    CHECK_THROWS_WITH(bf16_batch_norm_policy(), Catch::Contains(kName) &&
                                                    Catch::Contains(std::string("\"") + text + "\"") &&
                                                    Catch::Contains("auto") && Catch::Contains("f32"));
  }
  REQUIRE(::unsetenv(kName) == 0);
}

}  // namespace dptrain::cuda
