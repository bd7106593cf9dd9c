// The input stager of the CPU backend: f32 batches go in as they are, u8 batches are normalised on the
// way (normalise_planes, the arithmetic of the loader's host normalisation and of the GPU's kernel).
#include <catch2/catch.hpp>
#include <cstring>

#include "dptrain/backend/backend.hpp"
#include "dptrain/core/input_format.hpp"

using namespace dptrain;
using Catch::Matchers::Contains;

namespace {
Tensor byte_batch(const Shape& s) {
  Tensor t = Tensor::empty(s, DType::u8);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(i * 37 % 256);
  return t;
}

InputFormat byte_format() {
  InputFormat f;
  f.host = DType::u8;
  f.normalisation = {{123.675f, 116.28f, 103.53f}, {58.395f, 57.12f, 57.375f}};
  return f;
}
}  // namespace

TEST_CASE("the CPU stager normalises u8 batches into the net's input", "[backend][stager]") {
  auto backend = make_cpu_backend();
  const Shape s{2, 3, 4, 5};
  const InputFormat format = byte_format();
  auto stager = backend->make_input_stager(s, format);
  for (int round = 0; round < 2; ++round) {  // the normalised buffer is reused
    const Tensor bytes = byte_batch(s);
    Tensor input = Tensor::zeros(s, DType::f32);
    stager->stage(bytes);
    stager->finish(input);
    for (std::int64_t n = 0; n < 2; ++n)
      for (std::int64_t c = 0; c < 3; ++c)
        for (std::int64_t k = 0; k < 20; ++k) {
          const std::int64_t i = (n * 3 + c) * 20 + k;
          const float want = (static_cast<float>(bytes.data<std::uint8_t>()[i]) - format.normalisation.mean[c]) /
                             format.normalisation.stddev[c];
          REQUIRE(input.data<float>()[i] == want);
        }
  }
}

TEST_CASE("the CPU stager passes f32 batches through unchanged", "[backend][stager]") {
  auto backend = make_cpu_backend();
  const Shape s{2, 3, 4, 5};
  auto stager = backend->make_input_stager(s, InputFormat{});
  Tensor batch = Tensor::empty(s, DType::f32);
  for (std::int64_t i = 0; i < batch.numel(); ++i) batch.data<float>()[i] = 0.25f * static_cast<float>(i) - 3.f;
  Tensor input = Tensor::zeros(s, DType::f32);
  stager->stage(batch);
  stager->finish(input);
  CHECK(std::memcmp(input.raw(), batch.raw(), batch.bytes()) == 0);
  CHECK(backend->input_batch_type() == DType::f32);
}

TEST_CASE("the stager refuses batches that are not in its format", "[backend][stager]") {
  auto backend = make_cpu_backend();
  const Shape s{2, 3, 4, 5};
  auto bytes_stager = backend->make_input_stager(s, byte_format());
  CHECK_THROWS_WITH(bytes_stager->stage(Tensor::zeros(s, DType::f32)), Contains("plain u8 host tensor"));
  auto float_stager = backend->make_input_stager(s, InputFormat{});
  CHECK_THROWS_WITH(float_stager->stage(byte_batch(s)), Contains("plain f32 host tensor"));
  InputFormat two_channels = byte_format();
  two_channels.normalisation.mean.pop_back();
  CHECK_THROWS_WITH(backend->make_input_stager(s, two_channels), Contains("one mean and one std per channel"));
  InputFormat zero_std = byte_format();
  zero_std.normalisation.stddev[1] = 0;
  CHECK_THROWS_WITH(backend->make_input_stager(s, zero_std), Contains("must be positive"));
  CHECK_THROWS_WITH(backend->make_input_stager(Shape{6, 20}, byte_format()), Contains("[N, C, H, W]"));
  InputFormat bf16;
  bf16.host = DType::bf16;
  CHECK_THROWS_WITH(backend->make_input_stager(s, bf16), Contains("f32 or u8"));
}
