#include "dptrain/core/layout_transpose.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>

using namespace dptrain;

namespace {
// A plain host tensor whose element (n, c, h, w) is a distinct value: 1000n + 100c + 10h + w.
Tensor numbered(const Shape& s) {
  Tensor t = Tensor::empty(s, DType::f32);
  float* p = t.data<float>();
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t c = 0; c < s[1]; ++c)
      for (std::int64_t h = 0; h < s[2]; ++h)
        for (std::int64_t w = 0; w < s[3]; ++w)
          p[((n * s[1] + c) * s[2] + h) * s[3] + w] = static_cast<float>(1000 * n + 100 * c + 10 * h + w);
  return t;
}
}  // namespace

TEST_CASE("NHWC puts an element at ((n * H + h) * W + w) * C + c", "[core][layout]") {
  // Sizes across the 32-element tiles of the transpose, and channels that are no multiple of anything.
  const Shape s =
      GENERATE(Shape{2, 3, 4, 5}, Shape{1, 7, 1, 1}, Shape{3, 33, 5, 7}, Shape{1, 1, 6, 6}, Shape{2, 40, 9, 1});
  CAPTURE(s.to_string());
  const Tensor plain = numbered(s);
  const Tensor nhwc = with_layout(plain, Layout::nhwc);
  CHECK(nhwc.layout() == Layout::nhwc);
  CHECK(nhwc.bytes() == plain.bytes());
  const float* q = nhwc.elements<float>();
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t c = 0; c < s[1]; ++c)
      for (std::int64_t h = 0; h < s[2]; ++h)
        for (std::int64_t w = 0; w < s[3]; ++w)
          REQUIRE(q[((n * s[2] + h) * s[3] + w) * s[1] + c] == static_cast<float>(1000 * n + 100 * c + 10 * h + w));
  // The way back restores every byte; a tensor already in the layout asked for is returned as is.
  const Tensor back = with_layout(nhwc, Layout::plain);
  CHECK(back.layout() == Layout::plain);
  CHECK(std::memcmp(back.raw(), plain.raw(), plain.bytes()) == 0);
  CHECK(with_layout(plain, Layout::plain).raw() == plain.raw());
  CHECK(with_layout(nhwc, Layout::nhwc).raw() == nhwc.raw());
  CHECK_THROWS_WITH(nhwc.data<float>(), Catch::Contains("in the NHWC layout"));
}

TEST_CASE("NHWC round trips move bytes of every element type exactly", "[core][layout]") {
  const DType type = GENERATE(DType::f32, DType::bf16, DType::f16, DType::u8, DType::i32);
  CAPTURE(name_of(type));
  const Shape s{2, 5, 3, 7};
  Tensor t = Tensor::empty(s, type);
  auto* bytes = static_cast<std::uint8_t*>(t.raw());
  for (std::size_t i = 0; i < t.bytes(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 37 + 11);
  const Tensor there = with_layout(t, Layout::nhwc);
  // Element (n=1, c=3, h=2, w=6): the bytes of plain element ((1*5+3)*3+2)*7+6 at NHWC position ((1*3+2)*7+6)*5+3.
  const std::size_t e = size_of(type);
  CHECK(std::memcmp(static_cast<const std::uint8_t*>(there.raw()) + (((1 * 3 + 2) * 7 + 6) * 5 + 3) * e,
                    bytes + (((1 * 5 + 3) * 3 + 2) * 7 + 6) * e, e) == 0);
  const Tensor back = with_layout(there, Layout::plain);
  CHECK(std::memcmp(back.raw(), t.raw(), t.bytes()) == 0);
}

TEST_CASE("Layouts refuse what they cannot hold", "[core][layout]") {
  CHECK(fits_layout(Shape{2, 3, 4, 5}, Layout::nhwc));
  CHECK_FALSE(fits_layout(Shape{2, 3}, Layout::nhwc));
  CHECK(fits_layout(Shape{2, 3}, Layout::plain));
  CHECK_FALSE(fits_layout(Shape{2, 12, 3, 3}, Layout::blocked8));
  CHECK_THROWS_WITH(Tensor::empty(Shape{2, 3}, DType::f32, Layout::nhwc),
                    Catch::Contains("cannot be stored in the NHWC layout"));
  CHECK_THROWS_WITH(block_channels(Layout::nhwc), Catch::Contains("NHWC has no channel blocks"));
  CHECK(std::string(layout_name(Layout::plain)) == "plain (NCHW)");
  // A 1x1 spatial size is the plain layout already: a reshape to 2-D is allowed, a larger one is not.
  const Tensor pooled = with_layout(numbered(Shape{2, 6, 1, 1}), Layout::nhwc);
  CHECK(pooled.reshaped(Shape{2, 6}).layout() == Layout::plain);
  CHECK(std::memcmp(pooled.raw(), numbered(Shape{2, 6, 1, 1}).raw(), pooled.bytes()) == 0);
  const Tensor wide = with_layout(numbered(Shape{2, 6, 2, 1}), Layout::nhwc);
  CHECK_THROWS_WITH(wide.reshaped(Shape{2, 12}), Catch::Contains("in the NHWC layout; make a plain copy first"));
  CHECK_THROWS_WITH(with_layout(Tensor::empty(Shape{2, 16, 2, 2}, DType::f32, Layout::blocked8), Layout::nhwc),
                    Catch::Contains("between the plain and NHWC layouts only"));
  CHECK_THROWS_WITH(with_layout(Tensor::empty(Shape{4, 5}), Layout::nhwc), Catch::Contains("has no NHWC layout"));
}
