#pragma once
// A rectangle of an image's pixels: rows [top, top + height), columns [left, left + width). What a
// crop reads of a stored image, and so what a JPEG decode must produce of it.

namespace dptrain::data {

struct PixelWindow {
  int top = 0, left = 0, height = 0, width = 0;
  bool empty() const { return height <= 0 || width <= 0; }
  bool operator==(const PixelWindow&) const = default;
};

}  // namespace dptrain::data
