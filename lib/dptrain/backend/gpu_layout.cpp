#include "dptrain/backend/gpu_layout.hpp"

#include <cstdlib>
#include <string>

#include "dptrain/core/error.hpp"

namespace dptrain {

GpuLayoutPolicy gpu_layout_policy() {
  const char* value = std::getenv("DPTRAIN_LAYOUT");
  const std::string text = value != nullptr ? value : "";
  if (text.empty() || text == "auto") return GpuLayoutPolicy::automatic;
  if (text == "nhwc") return GpuLayoutPolicy::nhwc;
  if (text == "nchw") return GpuLayoutPolicy::nchw;
  throw Error("DPTRAIN_LAYOUT is \"" + text +
              "\"; give auto (NHWC activations on the GPU for bf16 and fp16, NCHW for fp32: the default), nhwc or "
              "nchw (in every precision)");
}

bool uses_nhwc(GpuLayoutPolicy policy, DType activation) {
  switch (policy) {
    case GpuLayoutPolicy::nhwc: return true;
    case GpuLayoutPolicy::nchw: return false;
    case GpuLayoutPolicy::automatic: return activation != DType::f32;
  }
  return false;
}

Layout gpu_activation_layout(bool nhwc, const Shape& shape) {
  return nhwc && shape.rank() == 4 ? Layout::nhwc : Layout::plain;
}

}  // namespace dptrain
