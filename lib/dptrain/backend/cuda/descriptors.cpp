#include "dptrain/backend/cuda/descriptors.hpp"

#include <array>
#include <limits>
#include <string>

#include "dptrain/core/error.hpp"

namespace dptrain::cuda {
namespace {
int narrow(std::int64_t value) {
  DPTRAIN_CHECK(value >= 0 && value <= std::numeric_limits<int>::max(), "cuDNN: dimension ", value,
                " does not fit an int");
  return static_cast<int>(value);
}
}  // namespace

cudnnDataType_t cudnn_type(DType type) {
  switch (type) {
    case DType::f32: return CUDNN_DATA_FLOAT;
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::bf16:
#if CUDNN_MAJOR > 8 || (CUDNN_MAJOR == 8 && CUDNN_MINOR >= 1)
      return CUDNN_DATA_BFLOAT16;
#else
      throw Error("cuDNN " + std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) +
                  " has no bfloat16; bf16 needs cuDNN 8.1 or newer (use --precision fp16 or fp32)");
#endif
    default: break;
  }
  throw Error("cuDNN: no tensor type for " + std::string(name_of(type)));
}

TensorDescriptor nchw_descriptor(const Shape& shape, DType type, const std::string& who) {
  return activation_descriptor(shape, type, Layout::plain, who);
}

TensorDescriptor activation_descriptor(const Shape& shape, DType type, Layout layout, const std::string& who) {
  DPTRAIN_CHECK(layout == Layout::plain || layout == Layout::nhwc, who, ": cuDNN descriptors take the NCHW or NHWC ",
                "layout, not ", layout_name(layout));
  DPTRAIN_CHECK(layout == Layout::plain ? shape.rank() >= 1 && shape.rank() <= 4 : shape.rank() == 4, who,
                ": cuDNN cannot describe a tensor of shape ", shape.to_string(), " as ",
                layout == Layout::plain ? "NCHW" : "NHWC");
  DPTRAIN_CHECK(shape.numel() <= std::numeric_limits<int>::max(), who, ": a tensor of shape ", shape.to_string(),
                " has ", shape.numel(),
                " elements, more than cuDNN's limit of 2^31 - 1; use a smaller --batch-size per GPU "
                "(more GPUs, or fewer images per step)");
  std::array<int, 4> dims{1, 1, 1, 1};
  for (int axis = 0; axis < shape.rank(); ++axis) dims[static_cast<std::size_t>(axis)] = narrow(shape[axis]);
  TensorDescriptor d;
  // The dimensions are N, C, H, W in both formats; the format says how they are laid out.
  const cudnnTensorFormat_t format = layout == Layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  DPTRAIN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, format, cudnn_type(type), dims[0], dims[1], dims[2], dims[3]));
  return d;
}

FilterDescriptor filter_descriptor(const Shape& weight, DType type, Layout layout, const std::string& who) {
  DPTRAIN_CHECK(weight.rank() == 4, who, ": a filter of shape ", weight.to_string(), " is not 4-D");
  DPTRAIN_CHECK(layout == Layout::plain || layout == Layout::nhwc, who, ": filters are KCRS or KRSC, not ",
                layout_name(layout));
  FilterDescriptor d;
  const cudnnTensorFormat_t format = layout == Layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  DPTRAIN_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d, cudnn_type(type), format, narrow(weight[0]), narrow(weight[1]),
                                                 narrow(weight[2]), narrow(weight[3])));
  return d;
}

TensorDescriptor channel_descriptor(std::int64_t channels) {
  TensorDescriptor d;
  DPTRAIN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, narrow(channels), 1, 1));
  return d;
}

}  // namespace dptrain::cuda
