#pragma once
// A typed, shaped view of memory on one device. A tensor either owns its storage (shared between
// copies of the Tensor object, like a shared_ptr) or views memory owned elsewhere; reshaping and
// slicing make views that keep the owner alive.
#include <cstddef>
#include <memory>

#include "dptrain/core/device.hpp"
#include "dptrain/core/dtype.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/core/shape.hpp"

namespace dptrain {

// How a tensor's elements are ordered in memory. `plain` is row-major in the logical shape (NCHW).
// `blocked8` and `blocked16` are oneDNN's nChw8c and nChw16c: a 4-D tensor's channels in blocks of 8
// (16), the block innermost, which its AVX2 (AVX-512) kernels read without a reorder. A blocked layout
// is only used when the channels are a multiple of the block, so a blocked tensor has no padding and
// the same size as a plain one, and each sample stays contiguous. `nhwc` (channels last) is the CUDA
// backend's layout for 16-bit activations, what cuDNN's tensor-core convolutions read without a
// transpose: element (n, c, h, w) of a 4-D tensor at ((n * H + h) * W + w) * C + c; samples stay
// contiguous, and a tensor whose H * W is 1 is laid out exactly like a plain one.
enum class Layout : std::uint8_t { plain, blocked8, blocked16, nhwc };

// Channels per block: 1 for plain, 8 or 16 for the blocked layouts (not defined for nhwc).
int block_channels(Layout layout);
// The layout's name in messages: "plain (NCHW)", "nChw8c", "nChw16c", "NHWC".
const char* layout_name(Layout layout);
// Whether `shape` may be stored in `layout`: any shape plain; 4-D shapes only otherwise, with channels a
// positive multiple of the block for the blocked layouts.
bool fits_layout(const Shape& shape, Layout layout);

class Tensor {
 public:
  Tensor() = default;

  // Host memory, 64-byte aligned (what oneDNN's vector kernels like). Contents are undefined.
  static Tensor empty(Shape shape, DType dtype = DType::f32, Layout layout = Layout::plain);
  static Tensor zeros(Shape shape, DType dtype = DType::f32, Layout layout = Layout::plain);
  // Adopts memory allocated by a backend; `owner` frees it when the last reference goes.
  static Tensor adopt(std::shared_ptr<void> owner, Shape shape, DType dtype, Device device,
                      Layout layout = Layout::plain);
  // A non-owning view: the caller keeps `data` alive longer than the tensor.
  static Tensor view(void* data, Shape shape, DType dtype, Device device = Device::cpu());

  bool defined() const { return data_ != nullptr || shape_.numel() == 0; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  Layout layout() const { return layout_; }
  std::int64_t numel() const { return shape_.numel(); }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * size_of(dtype_); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }

  // Typed access in logical (plain) order; checks the element type and the layout, so a wrong cast
  // or a blocked tensor read as NCHW fails loudly instead of reading garbage.
  template <typename T>
  T* data() {
    check_access(dtype_of<T>::value, true);
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    check_access(dtype_of<T>::value, true);
    return static_cast<const T*>(data_);
  }
  // Typed access in memory order, whatever the layout: for element-wise code on tensors that share one.
  template <typename T>
  T* elements() {
    check_access(dtype_of<T>::value, false);
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* elements() const {
    check_access(dtype_of<T>::value, false);
    return static_cast<const T*>(data_);
  }

  // The same memory with another shape of the same element count (a plain tensor, or a blocked or NHWC
  // one whose spatial size is 1x1, which is laid out exactly like a plain one).
  Tensor reshaped(Shape shape) const;
  // A tensor of another shape, type and layout at a byte offset into this one's memory, as a view that
  // keeps the owner alive (how a Net's planned activations live in one arena).
  Tensor view_bytes(std::size_t offset, Shape shape, DType dtype, Layout layout) const;
  // Samples [first, first + count) along the outermost axis, as a view.
  Tensor slice_samples(std::int64_t first, std::int64_t count) const;

 private:
  void check_access(DType requested, bool logical) const;

  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  Shape shape_;
  DType dtype_ = DType::f32;
  Device device_;
  Layout layout_ = Layout::plain;
};

// Whether a shape may be stored in a blocked layout (4-D with channels a positive multiple of its block).
bool blockable(const Shape& shape, Layout layout);

// Fails with a message naming `who` and both shapes when `actual` is not `expected`.
void check_shape(const Tensor& actual, const Shape& expected, const std::string& who, const char* what);

}  // namespace dptrain
