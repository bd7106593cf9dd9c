#include <catch2/catch.hpp>

#include "dptrain/core/tensor.hpp"

using namespace dptrain;

TEST_CASE("Shape counts elements and prints itself", "[core][shape]") {
  const Shape s{8, 3, 224, 224};
  CHECK(s.rank() == 4);
  CHECK(s.numel() == 8 * 3 * 224 * 224);
  CHECK(s.per_sample() == 3 * 224 * 224);
  CHECK(s.to_string() == "[8,3,224,224]");
  CHECK(Shape{}.numel() == 1);
  CHECK_THROWS_WITH(s[4], Catch::Contains("axis 4 out of range"));
  CHECK_THROWS_AS(Shape({2, -1}), Error);
}

TEST_CASE("Tensor owns aligned memory and makes views", "[core][tensor]") {
  Tensor t = Tensor::zeros(Shape{4, 6});
  CHECK(reinterpret_cast<std::uintptr_t>(t.raw()) % 64 == 0);
  CHECK(t.bytes() == 96);
  for (int i = 0; i < 24; ++i) CHECK(t.data<float>()[i] == 0.f);
  for (int i = 0; i < 24; ++i) t.data<float>()[i] = static_cast<float>(i);

  Tensor r = t.reshaped(Shape{2, 12});
  CHECK(r.raw() == t.raw());
  CHECK(r.shape() == Shape{2, 12});
  CHECK_THROWS_WITH(t.reshaped(Shape{5, 5}), Catch::Contains("element counts differ"));

  Tensor s = t.slice_samples(1, 2);
  CHECK(s.shape() == Shape{2, 6});
  CHECK(s.data<float>()[0] == 6.f);
  CHECK_THROWS_WITH(t.slice_samples(3, 2), Catch::Contains("outside a tensor of shape [4,6]"));

  // Views keep the owner alive.
  Tensor kept;
  {
    Tensor owner = Tensor::zeros(Shape{3});
    owner.data<float>()[2] = 5.f;
    kept = owner.reshaped(Shape{1, 3});
  }
  CHECK(kept.data<float>()[2] == 5.f);
}

TEST_CASE("Tensor checks the element type on access", "[core][tensor]") {
  Tensor labels = Tensor::zeros(Shape{3}, DType::i32);
  CHECK(labels.bytes() == 12);
  CHECK_NOTHROW(labels.data<std::int32_t>());
  CHECK_THROWS_WITH(labels.data<float>(), Catch::Contains("holds i32 but was read as f32"));
  CHECK(size_of(DType::bf16) == 2);
}

TEST_CASE("check_shape names the caller and both shapes", "[core][tensor]") {
  Tensor t = Tensor::zeros(Shape{2, 3});
  CHECK_NOTHROW(check_shape(t, Shape{2, 3}, "linear 'fc'", "input"));
  CHECK_THROWS_WITH(check_shape(t, Shape{2, 4}, "linear 'fc'", "input"),
                    "linear 'fc': input has shape [2,3] but [2,4] was expected");
}
