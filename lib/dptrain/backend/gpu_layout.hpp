#pragma once
// The layout of the CUDA backend's 4-D activations (and their gradients): NCHW (Layout::plain) or NHWC
// (channels last). cuDNN's tensor-core convolutions work in NHWC; given NCHW 16-bit tensors they
// transpose inside every call (or pick slower kernels), so 16-bit activations are NHWC by default.
// fp32 runs FMA math, where NCHW is cuDNN's native layout. Host-side, so it is tested without a GPU.
#include "dptrain/core/dtype.hpp"
#include "dptrain/core/shape.hpp"
#include "dptrain/core/tensor.hpp"

namespace dptrain {

// DPTRAIN_LAYOUT: "auto" (or unset: NHWC for bf16 and fp16 activations, NCHW for fp32), "nhwc" or
// "nchw" (in every precision). Anything else is an error naming the variable and its values.
enum class GpuLayoutPolicy { automatic, nhwc, nchw };
GpuLayoutPolicy gpu_layout_policy();

// Whether 4-D activations of element type `activation` are NHWC under `policy`.
bool uses_nhwc(GpuLayoutPolicy policy, DType activation);

// The layout of an activation of `shape`: NHWC for 4-D shapes when `nhwc`, plain otherwise (a 2-D
// tensor has one layout).
Layout gpu_activation_layout(bool nhwc, const Shape& shape);

}  // namespace dptrain
