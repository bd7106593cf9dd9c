#include "dptrain/core/shape.hpp"

#include "dptrain/core/error.hpp"

namespace dptrain {

Shape::Shape(std::initializer_list<std::int64_t> dims) : Shape(std::vector<std::int64_t>(dims)) {}

Shape::Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {
  for (auto d : dims_) DPTRAIN_CHECK(d >= 0, "negative dimension in shape ", to_string());
}

std::int64_t Shape::operator[](int axis) const {
  DPTRAIN_CHECK(axis >= 0 && axis < rank(), "axis ", axis, " out of range for shape ", to_string());
  return dims_[static_cast<std::size_t>(axis)];
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (auto d : dims_) n *= d;
  return n;
}

std::int64_t Shape::per_sample() const {
  DPTRAIN_CHECK(rank() >= 1, "a scalar shape has no samples");
  return dims_[0] == 0 ? 0 : numel() / dims_[0];
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

}  // namespace dptrain
