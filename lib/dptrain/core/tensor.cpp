#include "dptrain/core/tensor.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace dptrain {

int block_channels(Layout layout) {
  switch (layout) {
    case Layout::plain: return 1;
    case Layout::blocked8: return 8;
    case Layout::blocked16: return 16;
    case Layout::nhwc: break;
  }
  throw Error("the tensor layout " + std::string(layout_name(layout)) + " has no channel blocks");
}

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::plain: return "plain (NCHW)";
    case Layout::blocked8: return "nChw8c";
    case Layout::blocked16: return "nChw16c";
    case Layout::nhwc: return "NHWC";
  }
  return "unknown";
}

bool blockable(const Shape& shape, Layout layout) {
  return shape.rank() == 4 && shape[1] > 0 && shape[1] % block_channels(layout) == 0;
}

bool fits_layout(const Shape& shape, Layout layout) {
  switch (layout) {
    case Layout::plain: return true;
    case Layout::nhwc: return shape.rank() == 4;
    case Layout::blocked8:
    case Layout::blocked16: return blockable(shape, layout);
  }
  return false;
}

Tensor Tensor::empty(Shape shape, DType dtype, Layout layout) {
  const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * size_of(dtype);
  constexpr std::size_t alignment = 64;
  const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* memory = rounded == 0 ? nullptr : std::aligned_alloc(alignment, rounded);
  if (rounded != 0 && memory == nullptr) {
    throw Error(
        detail::concat("out of host memory allocating ", bytes, " bytes for a tensor of shape ", shape.to_string()));
  }
  return adopt(std::shared_ptr<void>(memory, std::free), std::move(shape), dtype, Device::cpu(), layout);
}

// calloc, not aligned_alloc and memset: a large block comes as fresh zero pages that cost memory only
// once written, so a tensor that is never written (a shape probe's parameters) commits none.
Tensor Tensor::zeros(Shape shape, DType dtype, Layout layout) {
  const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * size_of(dtype);
  constexpr std::size_t alignment = 64;
  if (bytes == 0) return empty(std::move(shape), dtype, layout);
  void* block = bytes > SIZE_MAX - alignment ? nullptr : std::calloc(1, bytes + alignment);
  if (block == nullptr) {
    throw Error(
        detail::concat("out of host memory allocating ", bytes, " bytes for a tensor of shape ", shape.to_string()));
  }
  const auto address = reinterpret_cast<std::uintptr_t>(block);
  void* aligned = reinterpret_cast<void*>((address + alignment - 1) / alignment * alignment);
  return adopt(std::shared_ptr<void>(aligned, [block](void*) { std::free(block); }), std::move(shape), dtype,
               Device::cpu(), layout);
}

Tensor Tensor::adopt(std::shared_ptr<void> owner, Shape shape, DType dtype, Device device, Layout layout) {
  DPTRAIN_CHECK(fits_layout(shape, layout), "a tensor of shape ", shape.to_string(), " cannot be stored in the ",
                layout_name(layout), " layout");
  Tensor t;
  t.data_ = owner.get();
  t.owner_ = std::move(owner);
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  t.layout_ = layout;
  return t;
}

Tensor Tensor::view(void* data, Shape shape, DType dtype, Device device) {
  Tensor t;
  t.data_ = data;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  DPTRAIN_CHECK(shape.numel() == numel(), "cannot reshape a tensor of shape ", shape_.to_string(), " to ",
                shape.to_string(), ": element counts differ");
  DPTRAIN_CHECK(layout_ == Layout::plain || shape_[2] * shape_[3] == 1, "cannot reshape a tensor of shape ",
                shape_.to_string(), " in the ", layout_name(layout_), " layout; make a plain copy first");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.layout_ = Layout::plain;
  return t;
}

Tensor Tensor::view_bytes(std::size_t offset, Shape shape, DType dtype, Layout layout) const {
  const std::size_t need = static_cast<std::size_t>(shape.numel()) * size_of(dtype);
  DPTRAIN_CHECK(offset <= bytes() && need <= bytes() - offset, "a view of ", need, " bytes at offset ", offset,
                " does not fit a tensor of ", bytes(), " bytes");
  std::byte* base = static_cast<std::byte*>(data_) + offset;
  return adopt(std::shared_ptr<void>(owner_, base), std::move(shape), dtype, device_, layout);
}

Tensor Tensor::slice_samples(std::int64_t first, std::int64_t count) const {
  DPTRAIN_CHECK(shape_.rank() >= 1 && first >= 0 && count >= 0 && first + count <= shape_[0], "samples [", first, ",",
                first + count, ") are outside a tensor of shape ", shape_.to_string());
  std::vector<std::int64_t> dims = shape_.dims();
  dims[0] = count;
  Tensor t = *this;
  const auto offset = static_cast<std::size_t>(first * shape_.per_sample()) * size_of(dtype_);
  t.data_ = static_cast<std::byte*>(data_) + offset;
  t.shape_ = Shape(std::move(dims));
  return t;
}

void Tensor::check_access(DType requested, bool logical) const {
  DPTRAIN_CHECK(requested == dtype_, "tensor of shape ", shape_.to_string(), " holds ", name_of(dtype_),
                " but was read as ", name_of(requested));
  DPTRAIN_CHECK(!logical || layout_ == Layout::plain, "tensor of shape ", shape_.to_string(), " is in the ",
                layout_name(layout_), " layout and cannot be read in NCHW order; copy it to a plain tensor");
}

void check_shape(const Tensor& actual, const Shape& expected, const std::string& who, const char* what) {
  DPTRAIN_CHECK(actual.shape() == expected, who, ": ", what, " has shape ", actual.shape().to_string(), " but ",
                expected.to_string(), " was expected");
}

}  // namespace dptrain
