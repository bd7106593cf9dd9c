#pragma once
// RAII owners of cuDNN descriptors: each creates on construction and destroys on destruction, so a
// plan that throws half-way through its constructor leaks nothing.
#include <utility>

#include "dptrain/backend/cuda/check_cuda.hpp"
#include "dptrain/core/dtype.hpp"
#include "dptrain/core/shape.hpp"

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

// An NCHW tensor descriptor of a 4-D shape (f32 unless `type` says otherwise); a shape of lower rank is
// padded with ones at the end.
TensorDescriptor nchw_descriptor(const Shape& shape, DType type = DType::f32);
// The per-channel [1, C, 1, 1] descriptor for biases.
TensorDescriptor channel_descriptor(std::int64_t channels);

}  // namespace dptrain::cuda
