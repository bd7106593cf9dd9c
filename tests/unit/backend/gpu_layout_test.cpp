// DPTRAIN_LAYOUT: which layout the CUDA backend keeps 4-D activations in (host-side, no GPU needed).
#include "dptrain/backend/gpu_layout.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>

using namespace dptrain;

namespace {
// Sets the variable for one scope and restores its absence after it.
struct LayoutVariable {
  explicit LayoutVariable(const char* value) { REQUIRE(::setenv("DPTRAIN_LAYOUT", value, 1) == 0); }
  ~LayoutVariable() { ::unsetenv("DPTRAIN_LAYOUT"); }
};
}  // namespace

TEST_CASE("16-bit activations are NHWC on the GPU unless DPTRAIN_LAYOUT says otherwise", "[backend][layout]") {
  ::unsetenv("DPTRAIN_LAYOUT");
  CHECK(gpu_layout_policy() == GpuLayoutPolicy::automatic);
  CHECK(uses_nhwc(GpuLayoutPolicy::automatic, DType::bf16));
  CHECK(uses_nhwc(GpuLayoutPolicy::automatic, DType::f16));
  CHECK_FALSE(uses_nhwc(GpuLayoutPolicy::automatic, DType::f32));
  for (DType type : {DType::f32, DType::bf16, DType::f16}) {
    CHECK(uses_nhwc(GpuLayoutPolicy::nhwc, type));
    CHECK_FALSE(uses_nhwc(GpuLayoutPolicy::nchw, type));
  }
  {
    LayoutVariable set("nhwc");
    CHECK(gpu_layout_policy() == GpuLayoutPolicy::nhwc);
  }
  {
    LayoutVariable set("nchw");
    CHECK(gpu_layout_policy() == GpuLayoutPolicy::nchw);
  }
  {
    LayoutVariable set("auto");
    CHECK(gpu_layout_policy() == GpuLayoutPolicy::automatic);
  }
  for (const char* bad : {"NHWC", "channels_last", " nhwc", "nchw ", "x"}) {
    INFO(bad);
    LayoutVariable set(bad);
    CHECK_THROWS_WITH(gpu_layout_policy(), Catch::Contains("DPTRAIN_LAYOUT is \"" + std::string(bad) + "\"") &&
                                               Catch::Contains("auto") && Catch::Contains("nchw"));
  }
}

TEST_CASE("only 4-D activations take the NHWC layout", "[backend][layout]") {
  CHECK(gpu_activation_layout(true, Shape{8, 64, 56, 56}) == Layout::nhwc);
  CHECK(gpu_activation_layout(true, Shape{8, 1000}) == Layout::plain);
  CHECK(gpu_activation_layout(true, Shape{8}) == Layout::plain);
  CHECK(gpu_activation_layout(false, Shape{8, 64, 56, 56}) == Layout::plain);
}
