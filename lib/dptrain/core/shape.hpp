#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace dptrain {

// Tensor dimensions, outermost first (NCHW for images, [out, in, kh, kw] for filters).
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(std::vector<std::int64_t> dims);

  int rank() const { return static_cast<int>(dims_.size()); }
  std::int64_t operator[](int axis) const;
  std::int64_t numel() const;
  const std::vector<std::int64_t>& dims() const { return dims_; }
  // The product of the dimensions after the first: features per sample.
  std::int64_t per_sample() const;

  bool operator==(const Shape&) const = default;
  std::string to_string() const;  // "[8,3,224,224]"

 private:
  std::vector<std::int64_t> dims_;
};

}  // namespace dptrain
