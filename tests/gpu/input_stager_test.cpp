// The GPU hand-over of input batches: the loader's u8 crops, normalised by the CUDA stager, must be
// the floats the CPU loader writes (normalise_planes), bit for bit in fp32; in bf16 and fp16 they must
// be exactly what the f32 path gives (host floats, converted on the device).
#include <catch2/catch.hpp>
#include <cstring>

#include "dptrain/backend/cuda/streams.hpp"
#include "dptrain/core/input_format.hpp"
#include "dptrain/data/buffer_pool.hpp"
#include "gpu/gpu_testing.hpp"

namespace dptrain {
namespace {
Tensor byte_batch(const Shape& s, int seed) {
  Tensor t = Tensor::empty(s, DType::u8);
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    t.data<std::uint8_t>()[i] = static_cast<std::uint8_t>((i * 37 + seed * 101 + i / 7) % 256);
  }
  return t;
}

// The net's input as the stager leaves it, back on the host as f32.
Tensor staged(Backend& be, const Shape& s, const InputFormat& format, const Tensor& batch) {
  auto stager = be.make_input_stager(s, format);
  Tensor input = gpu_testing::activation(be, s);
  stager->stage(batch);
  stager->finish(input);
  return gpu_testing::to_host(be, {&input})[0];
}
}  // namespace

TEST_CASE("the GPU normalises u8 batches into the floats the CPU writes", "[gpu][stager]") {
  const Shape s{3, 3, 17, 19};
  InputFormat bytes;
  bytes.host = DType::u8;
  bytes.normalisation = {{123.675f, 116.28f, 103.53f}, {58.395f, 57.12f, 57.375f}};
  CHECK(gpu_testing::gpu().input_batch_type() == DType::u8);
  for (int seed = 0; seed < 3; ++seed) {
    const Tensor batch = byte_batch(s, seed);
    Tensor floats = Tensor::empty(s, DType::f32);
    normalise_planes(batch.data<std::uint8_t>(), floats.data<float>(), s[0], s[2] * s[3], bytes.normalisation);
    const Tensor fp32 = staged(gpu_testing::gpu(), s, bytes, batch);
    CHECK(std::memcmp(fp32.raw(), floats.raw(), floats.bytes()) == 0);
    for (Precision p : {Precision::bf16, Precision::fp16}) {
      Backend* be = gpu_testing::gpu(p);
      if (be == nullptr) continue;
      INFO("precision " << name_of(p));
      const Tensor from_bytes = staged(*be, s, bytes, batch), from_floats = staged(*be, s, InputFormat{}, floats);
      CHECK(std::memcmp(from_bytes.raw(), from_floats.raw(), from_floats.bytes()) == 0);
    }
  }
}

TEST_CASE("the GPU stager refuses a batch of the wrong element type", "[gpu][stager]") {
  const Shape s{2, 3, 4, 4};
  InputFormat bytes;
  bytes.host = DType::u8;
  bytes.normalisation = {{1, 2, 3}, {4, 5, 6}};
  auto stager = gpu_testing::gpu().make_input_stager(s, bytes);
  CHECK_THROWS_WITH(stager->stage(Tensor::zeros(s, DType::f32)), Catch::Contains("plain u8 host tensor"));
}

// The loader fills page-locked buffers from Backend::batch_memory (a pool of them, as the loader's);
// the stager copies from such a buffer directly, so it must hold the batch until the copy is over: the
// pool may not hand the buffer out again before the next stage().
TEST_CASE("the GPU stages batches from the loader's page-locked buffers and holds each until copied", "[gpu][stager]") {
  const Shape s{4, 3, 32, 32};
  InputFormat bytes;
  bytes.host = DType::u8;
  bytes.normalisation = {{123.675f, 116.28f, 103.53f}, {58.395f, 57.12f, 57.375f}};
  Backend& be = gpu_testing::gpu();
  const HostMemory memory = be.batch_memory();
  CHECK(memory.kind == "page-locked");
  auto pool = data::BufferPool::create(static_cast<std::size_t>(s.numel()), 1, memory);
  auto stager = be.make_input_stager(s, bytes);
  Tensor input = gpu_testing::activation(be, s);
  void* previous = nullptr;
  for (int seed = 0; seed < 3; ++seed) {
    INFO("batch " << seed);
    Tensor batch = Tensor::adopt(pool->take(), s, DType::u8, Device::cpu());
    CHECK(cuda::is_page_locked(batch.raw()));
    const Tensor expected_bytes = byte_batch(s, seed);
    std::memcpy(batch.raw(), expected_bytes.raw(), batch.bytes());
    void* const current = batch.raw();
    stager->stage(batch);
    batch = Tensor();  // the loader's reference goes; the stager's keeps the buffer out of the pool
    {
      const std::shared_ptr<void> other = pool->take();
      CHECK(other.get() != current);
      // This stage() let the previous batch go (its copy was over): its buffer is the one free.
      if (previous != nullptr) CHECK(other.get() == previous);
    }
    previous = current;
    stager->finish(input);
    Tensor floats = Tensor::empty(s, DType::f32);
    normalise_planes(expected_bytes.data<std::uint8_t>(), floats.data<float>(), s[0], s[2] * s[3], bytes.normalisation);
    const Tensor got = gpu_testing::to_host(be, {&input})[0];
    CHECK(std::memcmp(got.raw(), floats.raw(), floats.bytes()) == 0);
  }
  // Pageable batches still go through the stager's own page-locked buffer.
  CHECK_FALSE(cuda::is_page_locked(byte_batch(s, 9).raw()));
  CHECK(staged(be, s, bytes, byte_batch(s, 9)).shape() == s);
}

}  // namespace dptrain
