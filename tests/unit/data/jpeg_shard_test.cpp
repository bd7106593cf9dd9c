// JPEG shards: the converter's packed layout (version 2) is read with pread outside the HDF5 lock;
// version 1's variable-length rows and packed bytes that are chunked or compressed go through H5Dread.
// Every way gives the same bytes and the same training batches; hostile offsets are refused at open.
#include <hdf5.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>

#include "dptrain/core/error.hpp"
#include "dptrain/data/jpeg.hpp"
#include "dptrain/data/loader.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/data/shard.hpp"
#include "dptrain/hdf5/handle.hpp"
#include "support/dataset_testing.hpp"
#include "support/error_testing.hpp"
#include "support/temp_dir.hpp"

using namespace dptrain;
using namespace dptrain::data;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {
constexpr int kClasses = 3, kSide = 16, kChannels = 3;

// A fresh directory per test, removed at the end.
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("dptrain_jpeg_shard_test") {}
};

// Sample s's JPEG: smooth gradients, a different image (and size in bytes) per sample.
std::vector<std::uint8_t> jpeg_of(std::int64_t s) {
  Image image{kSide, kSide, kChannels, {}};
  for (int y = 0; y < kSide; ++y)
    for (int x = 0; x < kSide; ++x)
      for (int c = 0; c < kChannels; ++c)
        image.pixels.push_back(static_cast<std::uint8_t>((s * 37 + y * (5 + s % 7) + x * 9 + c * 60) % 256));
  return encode_jpeg(image, 80 + static_cast<int>(s % 15));
}

// Four JPEG shards of 6, 3, 7 and 5 samples written with `layout`.
Manifest write_dataset(const fs::path& dir, const JpegShardLayout& layout) {
  testing::ShardedDataset spec;
  spec.name = "jpeg-shard-test";
  spec.height = spec.width = kSide;
  spec.channels = kChannels;
  spec.classes = kClasses;
  spec.encoding = "jpeg";
  spec.mean = {110.5, 100.25, 90.0};
  spec.stddev = {60.0, 61.5, 59.25};
  spec.sizes = {6, 3, 7, 5};
  return testing::write_sharded_dataset(dir.string(), spec, [&](const std::string& path, const ShardHeader& h) {
    std::vector<std::vector<std::uint8_t>> jpegs;
    std::vector<std::int32_t> labels;
    for (std::int64_t i = 0; i < h.samples; ++i) {
      jpegs.push_back(jpeg_of(h.first_sample + i));
      labels.push_back(static_cast<std::int32_t>((h.first_sample + i) % kClasses));
    }
    write_jpeg_shard(path, h, jpegs, labels.data(), layout);
  });
}

std::string shard_path(const Manifest& m, const fs::path& dir, int shard) {
  return (dir / m.split("train").shards[static_cast<std::size_t>(shard)].file).string();
}

ShardReader reader_of(const Manifest& m, const fs::path& dir, int shard) {
  return ShardReader(shard_path(m, dir, shard), expected_shard_header(m, "train", static_cast<std::size_t>(shard)));
}

LoaderConfig training(int threads, int max_open_shards) {
  LoaderConfig c;
  c.batch = 4;
  c.crop = 12;
  c.pad = 1;
  c.seed = 7;
  c.threads = threads;
  c.max_open_shards = max_open_shards;
  return c;
}

std::vector<std::vector<std::uint8_t>> batches_of(const Manifest& m, const fs::path& dir, const LoaderConfig& c,
                                                  std::string* read_path = nullptr) {
  return testing::batch_bytes(m, dir.string(), c, read_path);
}

// Overwrites shard `path`'s `jpeg_offsets` with `starts`.
void rewrite_offsets(const std::string& path, const std::vector<std::uint64_t>& starts) {
  h5::Handle file(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
  REQUIRE(file.id() >= 0);
  h5::Handle set(H5Dopen2(file.id(), "jpeg_offsets", H5P_DEFAULT), H5Dclose);
  REQUIRE(set.id() >= 0);
  REQUIRE(H5Dwrite(set.id(), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, starts.data()) >= 0);
}

std::vector<std::uint64_t> stored_offsets(const std::vector<std::vector<std::uint8_t>>& jpegs) {
  std::vector<std::uint64_t> starts{0};
  for (const auto& j : jpegs) starts.push_back(starts.back() + j.size());
  return starts;
}

using testing::error_of;
}  // namespace

TEST_CASE("packed JPEG shards are read with pread; version 1 and chunked ones through HDF5", "[data][jpeg_shard]") {
  TempDir packed, vlen, chunked, gzip;
  const Manifest mp = write_dataset(packed.path, JpegShardLayout{});
  const Manifest mv = write_dataset(vlen.path, JpegShardLayout{true, 0, 0});
  const Manifest mc = write_dataset(chunked.path, JpegShardLayout{false, 100, 0});
  const Manifest mz = write_dataset(gzip.path, JpegShardLayout{false, 256, 5});
  const ShardReader direct = reader_of(mp, packed.path, 2), old = reader_of(mv, vlen.path, 2),
                    in_chunks = reader_of(mc, chunked.path, 2), compressed = reader_of(mz, gzip.path, 2);
  CHECK(direct.reads_directly());
  CHECK(direct.read_path() == kDirectJpegReadPath);
  CHECK_FALSE(old.reads_directly());
  CHECK_THAT(old.read_path(), Contains("H5Dread") && Contains("variable-length") && Contains("version 1"));
  CHECK_FALSE(in_chunks.reads_directly());
  CHECK_THAT(in_chunks.read_path(), Contains("H5Dread") && Contains("chunked"));
  CHECK_FALSE(compressed.reads_directly());
  CHECK_THAT(compressed.read_path(), Contains("chunked"));
  for (std::int64_t i = 0; i < direct.header().samples; ++i) {
    const std::vector<std::uint8_t> want = jpeg_of(direct.header().first_sample + i);
    REQUIRE(direct.read_jpeg(i) == want);
    REQUIRE(old.read_jpeg(i) == want);
    REQUIRE(in_chunks.read_jpeg(i) == want);
    REQUIRE(compressed.read_jpeg(i) == want);
  }
  // The file itself says which layout it is: version 2 for the packed ones, 1 for the old.
  CHECK(h5::read_int_attribute(h5::open_file(shard_path(mp, packed.path, 0)).id(), "version", "test") == 2);
  CHECK(h5::read_int_attribute(h5::open_file(shard_path(mv, vlen.path, 0)).id(), "version", "test") == 1);
}

TEST_CASE("JPEG training batches are bit-identical on the pread path and on every fallback", "[data][jpeg_shard]") {
  TempDir packed, vlen, chunked;
  const Manifest mp = write_dataset(packed.path, JpegShardLayout{});
  const Manifest mv = write_dataset(vlen.path, JpegShardLayout{true, 0, 0});
  const Manifest mc = write_dataset(chunked.path, JpegShardLayout{false, 64, 3});
  std::string pp, pv, pc;
  const auto reference = batches_of(mp, packed.path, training(1, 0), &pp);
  CHECK(pp == kDirectJpegReadPath);
  CHECK(batches_of(mp, packed.path, training(3, 1), nullptr) == reference);  // shards closed and reopened
  CHECK(batches_of(mv, vlen.path, training(2, 0), &pv) == reference);
  CHECK_THAT(pv, Contains("variable-length"));
  CHECK(batches_of(mc, chunked.path, training(2, 2), &pc) == reference);
  CHECK_THAT(pc, Contains("chunked"));
}

TEST_CASE("hostile JPEG offsets are refused when the shard opens, naming the file and the sample",
          "[data][jpeg_shard]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, JpegShardLayout{});
  const std::string path = shard_path(m, dir.path, 1);  // samples 6, 7, 8
  const auto jpegs = std::vector<std::vector<std::uint8_t>>{jpeg_of(6), jpeg_of(7), jpeg_of(8)};
  const std::vector<std::uint64_t> good = stored_offsets(jpegs);
  const auto open = [&] { return error_of([&] { reader_of(m, dir.path, 1); }); };
  REQUIRE(open().empty());

  std::vector<std::uint64_t> empty_entry = good;
  empty_entry[2] = empty_entry[1];  // sample 1 has no bytes
  rewrite_offsets(path, empty_entry);
  CHECK_THAT(open(), Contains(path) && Contains("sample 1") && Contains("empty"));

  std::vector<std::uint64_t> backwards = good;
  backwards[1] = good[2] + 5;  // sample 0 ends after sample 1's end: sample 1 runs backwards
  rewrite_offsets(path, backwards);
  CHECK_THAT(open(), Contains(path) && Contains("backwards"));

  std::vector<std::uint64_t> short_span = good;
  short_span[3] = good[3] - 1;  // the offsets stop before the end of the bytes
  rewrite_offsets(path, short_span);
  CHECK_THAT(open(), Contains(path) && Contains("'jpeg_offsets' spans bytes"));

  std::vector<std::uint64_t> not_from_zero = good;
  not_from_zero[0] = 1;
  rewrite_offsets(path, not_from_zero);
  CHECK_THAT(open(), Contains("'jpeg_offsets' spans bytes 1"));
  rewrite_offsets(path, good);
  CHECK(open().empty());
}

TEST_CASE("a JPEG entry larger than an image may be is refused before it is read", "[data][jpeg_shard]") {
  ShardHeader h;
  h.height = h.width = 16;
  h.channels = 3;
  CHECK(max_jpeg_bytes(h) == 8u * 16 * 16 * 3 + 65536);
  // A shard whose second entry is 200 KB: far more than the 71,680 bytes a 16x16x3 JPEG may take.
  TempDir dir;
  testing::ShardedDataset spec;
  spec.height = spec.width = kSide;
  spec.channels = kChannels;
  spec.classes = kClasses;
  spec.encoding = "jpeg";
  spec.sizes = {2};
  std::vector<std::uint8_t> big = jpeg_of(0);
  big.resize(200 << 10, 0);
  const std::string file = shard_file_name("train", 0, 1);
  const Manifest m =
      testing::write_sharded_dataset(dir.path.string(), spec, [&](const std::string& path, const ShardHeader& header) {
        const std::vector<std::int32_t> labels{0, 1};
        write_jpeg_shard(path, header, {jpeg_of(1), big}, labels.data());
      });
  CHECK_THAT(error_of([&] { reader_of(m, dir.path, 0); }),
             Contains(file) && Contains("sample 1") && Contains("more than the"));
}
