#include "dptrain/backend/specs.hpp"

#include <catch2/catch.hpp>

#include "dptrain/core/error.hpp"

using namespace dptrain;

TEST_CASE("window output sizes follow floor and Caffe's ceil rounding", "[backend][shapes]") {
  // GoogLeNet: conv1 7x7/2 pad 3 on 224 -> 112; pool1 3x3/2 (ceil) on 112 -> 56; pool 3x3/2 on 28 -> 14.
  CHECK(window_output_size(224, 7, 2, 3, Rounding::floor) == 112);
  CHECK(window_output_size(112, 3, 2, 0, Rounding::floor) == 55);
  CHECK(window_output_size(112, 3, 2, 0, Rounding::ceil) == 56);
  CHECK(window_output_size(28, 3, 2, 0, Rounding::ceil) == 14);
  // Caffe drops a last window that would start in the trailing padding...
  CHECK(window_output_size(4, 2, 2, 1, Rounding::ceil) == 3);
  // ...and so do we without padding, where a stride longer than the kernel would otherwise place the
  // last window wholly past the image.
  CHECK(window_output_size(4, 1, 2, 0, Rounding::ceil) == 2);
  CHECK(window_output_size(6, 2, 3, 0, Rounding::ceil) == 2);
  std::int64_t extra = -1;
  CHECK(window_output_size(112, 3, 2, 0, Rounding::ceil, &extra) == 56);
  CHECK(extra == 1);
  CHECK(window_output_size(112, 3, 2, 0, Rounding::floor, &extra) == 55);
  CHECK(extra == 0);
}

TEST_CASE("convolution and pooling shapes", "[backend][shapes]") {
  ConvolutionSpec conv{Shape{2, 3, 17, 13}, 8, Window2d{1, 7, 1, 1, 0, 3}};
  CHECK(convolution_output_shape(conv, "c") == Shape{2, 8, 17, 13});
  CHECK(convolution_weight_shape(conv) == Shape{8, 3, 1, 7});
  PoolingSpec pool{Shape{2, 3, 9, 9}, PoolingKind::max, Window2d::square(3, 2), Rounding::ceil};
  CHECK(pooling_output_shape(pool, "p") == Shape{2, 3, 4, 4});
  CHECK(linear_weight_shape(LinearSpec{Shape{5, 2, 3, 3}, 10}) == Shape{10, 18});
}

TEST_CASE("shape errors name the caller and the shapes", "[backend][shapes]") {
  ConvolutionSpec too_big{Shape{1, 3, 4, 4}, 8, Window2d::square(7)};
  CHECK_THROWS_WITH(convolution_output_shape(too_big, "convolution 'conv1'"),
                    Catch::Contains("convolution 'conv1': a 7x7 window does not fit an input of shape [1,3,4,4]"));
  ConvolutionSpec flat{Shape{1, 3}, 8, Window2d::square(1)};
  CHECK_THROWS_WITH(convolution_output_shape(flat, "convolution 'c'"), Catch::Contains("must be 4-D"));
  const std::vector<Shape> mismatched{Shape{2, 4, 8, 8}, Shape{2, 6, 7, 8}};
  CHECK_THROWS_WITH(concat_output_shape(mismatched, "concat 'mixed'"),
                    "concat 'mixed': input 1 has shape [2,6,7,8] but input 0 has shape [2,4,8,8]; all inputs must "
                    "agree except in channels");
  const std::vector<Shape> fine{Shape{2, 4, 8, 8}, Shape{2, 6, 8, 8}};
  CHECK(concat_output_shape(fine, "c") == Shape{2, 10, 8, 8});
}
