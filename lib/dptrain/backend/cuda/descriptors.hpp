#pragma once
// RAII owners of cuDNN descriptors: each creates on construction and destroys on destruction, so a
// plan that throws half-way through its constructor leaks nothing.
#include <string>
#include <utility>

#include "dptrain/backend/cuda/check_cuda.hpp"
#include "dptrain/core/dtype.hpp"
#include "dptrain/core/shape.hpp"
#include "dptrain/core/tensor.hpp"

namespace dptrain::cuda {

template <typename Handle, cudnnStatus_t (*Create)(Handle*), cudnnStatus_t (*Destroy)(Handle)>
class Descriptor {
 public:
  Descriptor() { DPTRAIN_CUDNN_CHECK(Create(&handle_)); }
  ~Descriptor() {
    if (handle_) Destroy(handle_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Descriptor(Descriptor&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Descriptor& operator=(Descriptor&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Handle get() const { return handle_; }
  operator Handle() const { return handle_; }  // NOLINT: passed straight to cuDNN calls

 private:
  Handle handle_ = nullptr;
};

using TensorDescriptor = Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor = Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using LrnDescriptor = Descriptor<cudnnLRNDescriptor_t, cudnnCreateLRNDescriptor, cudnnDestroyLRNDescriptor>;

// cuDNN's name for an element type (f32, bf16, f16); bf16 needs cuDNN 8.1 or newer.
cudnnDataType_t cudnn_type(DType type);

// An NCHW tensor descriptor of a 4-D shape of element type `type` for op `who`; a shape of lower rank is
// padded with ones at the end. cuDNN's legacy API describes at most 2^31 - 1 elements: a larger tensor
// (about 2,670 ResNet-50 images per GPU in its first layers) is refused naming the op, the shape and
// what to do, instead of cuDNN's bare BAD_PARAM.
TensorDescriptor nchw_descriptor(const Shape& shape, DType type, const std::string& who);
// The same for a tensor in `layout`: NCHW for plain, cuDNN's NHWC format for Layout::nhwc (a 4-D shape).
TensorDescriptor activation_descriptor(const Shape& shape, DType type, Layout layout, const std::string& who);
// A filter [K, C, R, S] of element type `type`: KCRS (CUDNN_TENSOR_NCHW) for plain, KRSC
// (CUDNN_TENSOR_NHWC, what NHWC convolutions read) for Layout::nhwc.
FilterDescriptor filter_descriptor(const Shape& weight, DType type, Layout layout, const std::string& who);
// The per-channel [1, C, 1, 1] descriptor for biases.
TensorDescriptor channel_descriptor(std::int64_t channels);

}  // namespace dptrain::cuda
