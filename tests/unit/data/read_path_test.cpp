// How shards are read: pread of the contiguous images for the converter's layout, pread at chunk
// offsets for one image per chunk (earlier converters), H5Dread under the lock for every other, the
// same pixels either way; recycled batch buffers; JPEG decode at reduced scale.
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "dptrain/data/buffer_pool.hpp"
#include "dptrain/data/jpeg.hpp"
#include "dptrain/data/loader.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/data/shard.hpp"
#include "support/dataset_testing.hpp"
#include "support/temp_dir.hpp"

using namespace dptrain;
using namespace dptrain::data;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {
constexpr int kClasses = 4, kSide = 12, kChannels = 3;

// A fresh directory per test, removed at the end.
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("dptrain_read_path_test") {}
};

std::uint8_t pixel(std::int64_t sample, int y, int x, int c) {
  return static_cast<std::uint8_t>((sample * 67 + c * 85 + y * 13 + x * 3) % 256);
}

// Four shards of 7, 5, 9 and 6 samples (or `sizes`) of 12x12x3, raw, written with `layout`; a mean
// and std that are not 0 and 1, so normalisation is exercised.
Manifest write_dataset(const fs::path& dir, const RawShardLayout& layout,
                       std::vector<std::int64_t> sizes = {7, 5, 9, 6}) {
  testing::ShardedDataset spec;
  spec.name = "read-path-test";
  spec.height = spec.width = kSide;
  spec.channels = kChannels;
  spec.classes = kClasses;
  spec.mean = {100.5, 120.25, 90.0};
  spec.stddev = {60.0, 61.5, 59.25};
  spec.sizes = std::move(sizes);
  return testing::write_sharded_dataset(dir.string(), spec, [&](const std::string& path, const ShardHeader& h) {
    std::vector<std::uint8_t> pixels;
    std::vector<std::int32_t> labels;
    for (std::int64_t i = 0; i < h.samples; ++i) {
      const std::int64_t sample = h.first_sample + i;
      for (int y = 0; y < kSide; ++y)
        for (int x = 0; x < kSide; ++x)
          for (int c = 0; c < kChannels; ++c) pixels.push_back(pixel(sample, y, x, c));
      labels.push_back(static_cast<std::int32_t>(sample % kClasses));
    }
    write_raw_shard(path, h, pixels.data(), labels.data(), layout);
  });
}

ShardHeader expected_header(const Manifest& m, int shard) {
  return expected_shard_header(m, "train", static_cast<std::size_t>(shard));
}

LoaderConfig training(int threads, int max_open_shards) {
  LoaderConfig c;
  c.batch = 5;
  c.crop = 9;
  c.pad = 2;
  c.flip = true;
  c.seed = 42;
  c.threads = threads;
  c.max_open_shards = max_open_shards;
  return c;
}

std::vector<std::vector<std::uint8_t>> batches_of(const Manifest& m, const fs::path& dir, const LoaderConfig& c,
                                                  std::string* read_path = nullptr) {
  return testing::batch_bytes(m, dir.string(), c, read_path);
}
}  // namespace

TEST_CASE("the converter's layout is read with pread; other layouts through HDF5, naming why", "[data][read_path]") {
  TempDir contiguous, one, several, gzip;
  const Manifest mc = write_dataset(contiguous.path, RawShardLayout{});
  const Manifest m1 = write_dataset(one.path, RawShardLayout{1, 0});
  const Manifest m3 = write_dataset(several.path, RawShardLayout{3, 0});
  const Manifest mz = write_dataset(gzip.path, RawShardLayout{1, 4});
  const auto reader = [](const Manifest& m, const fs::path& dir) {
    return ShardReader((dir / m.split("train").shards[2].file).string(), expected_header(m, 2));
  };
  const ShardReader direct = reader(mc, contiguous.path), per_chunk = reader(m1, one.path),
                    chunked = reader(m3, several.path), compressed = reader(mz, gzip.path);
  CHECK(direct.reads_directly());
  CHECK(direct.read_path() == kDirectReadPath);
  CHECK(per_chunk.reads_directly());
  CHECK(per_chunk.read_path() == kDirectChunkReadPath);
  CHECK_FALSE(chunked.reads_directly());
  CHECK_THAT(chunked.read_path(), Contains("H5Dread") && Contains("not exactly one image"));
  CHECK_FALSE(compressed.reads_directly());
  CHECK_THAT(compressed.read_path(), Contains("H5Dread") && Contains("filtered"));
  // Every sample the same bytes, whichever way it is read.
  const std::size_t bytes = kSide * kSide * kChannels;
  for (std::int64_t i = 0; i < direct.header().samples; ++i) {
    std::vector<std::uint8_t> a(bytes), b(bytes), c(bytes), d(bytes);
    direct.read_image(i, a.data());
    per_chunk.read_image(i, b.data());
    chunked.read_image(i, c.data());
    compressed.read_image(i, d.data());
    REQUIRE(a == b);
    REQUIRE(a == c);
    REQUIRE(a == d);
    CHECK(a[5] == pixel(direct.header().first_sample + i, 0, 1, 2));
  }
}

TEST_CASE("a shard of many images, one per chunk, is not looked up chunk by chunk on an old HDF5",
          "[data][read_path]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, RawShardLayout{1, 0}, {kMaxChunkLookups + 1});
  const ShardReader reader((dir.path / m.split("train").shards[0].file).string(), expected_header(m, 0));
#if H5_VERSION_GE(1, 14, 3)
  CHECK(reader.read_path() == kDirectChunkReadPath);  // one pass over the chunk index
#else
  CHECK_FALSE(reader.reads_directly());
  CHECK_THAT(reader.read_path(), Contains("H5Dread") && Contains("quadratic") && Contains("convert the dataset again"));
#endif
  std::vector<std::uint8_t> last(kSide * kSide * kChannels);
  reader.read_image(kMaxChunkLookups, last.data());
  CHECK(last[5] == pixel(kMaxChunkLookups, 0, 1, 2));
}

TEST_CASE("training batches are bit-identical on the pread paths and on the HDF5 fallback", "[data][read_path]") {
  TempDir contiguous, one, several, gzip;
  const Manifest mc = write_dataset(contiguous.path, RawShardLayout{});
  const Manifest m1 = write_dataset(one.path, RawShardLayout{1, 0});
  const Manifest m3 = write_dataset(several.path, RawShardLayout{4, 0});
  const Manifest mz = write_dataset(gzip.path, RawShardLayout{2, 6});
  std::string pc, p1, p3, pz;
  const auto direct = batches_of(mc, contiguous.path, training(2, 0), &pc);
  CHECK(pc == kDirectReadPath);
  CHECK(batches_of(m1, one.path, training(2, 0), &p1) == direct);
  CHECK(p1 == kDirectChunkReadPath);
  CHECK(batches_of(m3, several.path, training(2, 0), &p3) == direct);
  CHECK_THAT(p3, Contains("H5Dread"));
  CHECK(batches_of(mz, gzip.path, training(1, 0), &pz) == direct);
  CHECK_THAT(pz, Contains("filtered"));
}

TEST_CASE("shards closed and reopened (one open at a time) give the same batches", "[data][read_path]") {
  TempDir contiguous, one, gzip;
  const Manifest mc = write_dataset(contiguous.path, RawShardLayout{});
  const Manifest m1 = write_dataset(one.path, RawShardLayout{1, 0});
  const Manifest mz = write_dataset(gzip.path, RawShardLayout{1, 1});
  const auto reference = batches_of(mc, contiguous.path, training(1, 0));
  CHECK(batches_of(mc, contiguous.path, training(3, 1)) == reference);
  CHECK(batches_of(m1, one.path, training(3, 1)) == reference);
  CHECK(batches_of(mz, gzip.path, training(3, 1)) == reference);
}

TEST_CASE("a shard rewritten after its offsets were found is refused naming the file", "[data][read_path]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, RawShardLayout{});
  const std::string path = (dir.path / m.split("train").shards[0].file).string();
  ShardReader reader(path, expected_header(m, 0));
  REQUIRE(reader.reads_directly());
  reader.close_file();
  fs::resize_file(path, fs::file_size(path) / 2);
  try {
    reader.direct_read(0);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Contains(path) && Contains("changed"));
  }
}

TEST_CASE("batch buffers come back to the pool when the last user lets go", "[data][read_path]") {
  auto pool = BufferPool::create(1000, 1);
  void* first = nullptr;
  {
    std::shared_ptr<void> a = pool->take();
    first = a.get();
    REQUIRE(first != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(first) % 64 == 0);
  }
  std::shared_ptr<void> again = pool->take();
  CHECK(again.get() == first);
  std::shared_ptr<void> other = pool->take();
  CHECK(other.get() != first);
  pool.reset();  // buffers outlive the pool's owner
  std::memset(other.get(), 1, 1000);
}

TEST_CASE("JPEG images at least twice the crop decode at reduced scale", "[data][jpeg]") {
  CHECK(jpeg_scale_for(256, 256, 224) == JpegScale{1, 1});
  CHECK(jpeg_scale_for(500, 375, 224) == JpegScale{1, 1});
  CHECK(jpeg_scale_for(512, 683, 224) == JpegScale{1, 2});
  CHECK(jpeg_scale_for(480, 480, 112) == JpegScale{1, 4});
  CHECK(jpeg_scale_for(480, 480, 0) == JpegScale{1, 1});
  CHECK(JpegScale{3, 8}.scaled(17) == 7);

  Image image{32, 48, 3, {}};
  for (int i = 0; i < 32 * 48 * 3; ++i) image.pixels.push_back(static_cast<std::uint8_t>((i * 7) % 251));
  const std::vector<std::uint8_t> bytes = encode_jpeg(image, 95);
  JpegDecoder decoder;
  Image half, full;
  decoder.decode(bytes.data(), bytes.size(), 3, JpegScale{1, 2}, "test", half);
  decoder.decode(bytes.data(), bytes.size(), 3, JpegScale{}, "test", full);
  CHECK(half.height == 16);
  CHECK(half.width == 24);
  CHECK(half.pixels.size() == 16u * 24u * 3u);
  CHECK(full.pixels == decode_jpeg(bytes.data(), bytes.size(), 3, "test").pixels);
}
