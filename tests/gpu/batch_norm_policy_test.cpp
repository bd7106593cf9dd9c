// DPTRAIN_BATCH_NORM and DPTRAIN_BF16_BATCH_NORM are read strictly (host logic: the CUDA libraries, not
// a GPU).
#include "dptrain/backend/cuda/batch_norm_policy.hpp"

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

TEST_CASE("DPTRAIN_BATCH_NORM: auto, own or cudnn, anything else an error naming the variable") {
  constexpr const char* kName = "DPTRAIN_BATCH_NORM";
  REQUIRE(::unsetenv(kName) == 0);
  CHECK(batch_norm_policy() == BatchNormPolicy::automatic);
  const struct {
    const char* text;
    BatchNormPolicy policy;
  } accepted[] = {{"", BatchNormPolicy::automatic},
                  {"auto", BatchNormPolicy::automatic},
                  {"own", BatchNormPolicy::own},
                  {"cudnn", BatchNormPolicy::cudnn}};
  for (const auto& [text, policy] : accepted) {
    INFO(kName << "=\"" << text << "\"");
    REQUIRE(::setenv(kName, text, 1) == 0);
    CHECK(batch_norm_policy() == policy);
  }
  for (const char* text : {"Own", "cuDNN", "native", "f32", "1", "auto ", "own,cudnn", "on"}) {
    INFO(kName << "=\"" << text << "\"");
    REQUIRE(::setenv(kName, text, 1) == 0);
    CHECK_THROWS_AS(batch_norm_policy(), Error);
    CHECK_THROWS_WITH(batch_norm_policy(), Catch::Contains(kName) && Catch::Contains(std::string("\"") + text + "\"") &&
                                               Catch::Contains("auto") && Catch::Contains("own") &&
                                               Catch::Contains("cudnn"));
  }
  REQUIRE(::unsetenv(kName) == 0);
}

TEST_CASE("DPTRAIN_BATCH_NORM: by default our kernels for 16-bit activations and cuDNN for fp32") {
  CHECK_FALSE(uses_own_batch_norm(BatchNormPolicy::automatic, DType::f32));
  CHECK(uses_own_batch_norm(BatchNormPolicy::automatic, DType::bf16));
  CHECK(uses_own_batch_norm(BatchNormPolicy::automatic, DType::f16));
  for (const DType type : {DType::f32, DType::bf16, DType::f16}) {
    CHECK(uses_own_batch_norm(BatchNormPolicy::own, type));
    CHECK_FALSE(uses_own_batch_norm(BatchNormPolicy::cudnn, type));
  }
}

}  // namespace dptrain::cuda
