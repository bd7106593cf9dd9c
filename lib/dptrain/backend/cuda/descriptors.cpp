#include "dptrain/backend/cuda/descriptors.hpp"

#include <array>
#include <limits>

#include "dptrain/core/error.hpp"

namespace dptrain::cuda {
namespace {
int narrow(std::int64_t value) {
  DPTRAIN_CHECK(value >= 0 && value <= std::numeric_limits<int>::max(), "cuDNN: dimension ", value,
                " does not fit an int");
  return static_cast<int>(value);
}
}  // namespace

TensorDescriptor nchw_descriptor(const Shape& shape) {
  DPTRAIN_CHECK(shape.rank() >= 1 && shape.rank() <= 4, "cuDNN: cannot describe a tensor of shape ",
                shape.to_string(), " as NCHW");
  std::array<int, 4> dims{1, 1, 1, 1};
  for (int axis = 0; axis < shape.rank(); ++axis) dims[static_cast<std::size_t>(axis)] = narrow(shape[axis]);
  TensorDescriptor d;
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, dims[0], dims[1], dims[2], dims[3]));
  return d;
}

TensorDescriptor channel_descriptor(std::int64_t channels) {
  TensorDescriptor d;
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, narrow(channels), 1, 1));
  return d;
}

}  // namespace dptrain::cuda
