// Shards reject what disagrees with the manifest before anything is allocated, naming file and field.
#include "dptrain/data/shard.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "dptrain/data/manifest.hpp"

using namespace dptrain;

namespace {
const std::string kPath = (std::filesystem::temp_directory_path() / "dptrain-shard-test.h5").string();
const data::ShardHeader kHeader{"train", 0, 1, 0, 3, 2, 2, 1, "raw", 10};
const std::uint8_t kPixels[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
}  // namespace

TEST_CASE("a shard reads back what was written", "[data][shard]") {
  const std::int32_t labels[3] = {0, 9, 4};
  data::write_raw_shard(kPath, kHeader, kPixels, labels);
  CHECK(data::read_shard_header(kPath) == kHeader);
  const data::ShardReader reader(kPath, kHeader);
  std::uint8_t image[4];
  reader.read_image(2, image);
  CHECK(std::vector<std::uint8_t>(image, image + 4) == std::vector<std::uint8_t>{9, 10, 11, 12});
  CHECK(reader.labels() == std::vector<std::int32_t>{0, 9, 4});
  CHECK_THROWS_WITH(reader.read_image(3, image), Catch::Contains("sample 3 is outside the shard"));
  std::filesystem::remove(kPath);
}

TEST_CASE("labels out of range are refused naming the file, the sample and the label", "[data][shard]") {
  const std::int32_t labels[3] = {0, 12, 4};
  data::write_raw_shard(kPath, kHeader, kPixels, labels);
  CHECK_THROWS_WITH(data::ShardReader(kPath, kHeader), Catch::Contains(kPath) &&
                                                           Catch::Contains("sample 1 has label 12") &&
                                                           Catch::Contains("10 classes"));
  std::filesystem::remove(kPath);
}

TEST_CASE("a shard that disagrees with the manifest names the field", "[data][shard]") {
  const std::int32_t labels[3] = {0, 1, 2};
  data::write_raw_shard(kPath, kHeader, kPixels, labels);
  data::ShardHeader expected = kHeader;
  expected.height = 3;
  CHECK_THROWS_WITH(data::ShardReader(kPath, expected),
                    Catch::Contains(kPath) && Catch::Contains("'height' is 2 but the manifest says 3"));
  expected = kHeader;
  expected.first_sample = 100;
  CHECK_THROWS_WITH(data::ShardReader(kPath, expected),
                    Catch::Contains("'first_sample' is 0 but the manifest says 100"));
  std::filesystem::remove(kPath);
  CHECK_THROWS_WITH(data::ShardReader(kPath, kHeader), Catch::Contains(kPath) && Catch::Contains("not found"));
}

// HDF5 stores object times unless told not to: the same shard written a second later must still be
// the same bytes, so that converting again from the same source gives the checksums of the first time.
TEST_CASE("a shard written twice from the same data is the same file, byte for byte", "[data][shard]") {
  namespace fs = std::filesystem;
  const std::int32_t labels[3] = {0, 9, 4};
  const data::ShardHeader jpeg_header{"train", 0, 1, 0, 3, 2, 2, 1, "jpeg", 10};
  const std::vector<std::vector<std::uint8_t>> jpegs = {{0xff, 0xd8, 1}, {0xff, 0xd8, 2, 3}, {0xff, 0xd8}};
  struct Case {
    const char* what;
    std::function<void(const std::string&)> write;
  };
  const std::vector<Case> cases = {
      {"raw, contiguous", [&](const std::string& p) { data::write_raw_shard(p, kHeader, kPixels, labels); }},
      {"raw, chunked with gzip",
       [&](const std::string& p) {
         data::write_raw_shard(p, kHeader, kPixels, labels, {2, 6});
       }},
      {"jpeg, packed", [&](const std::string& p) { data::write_jpeg_shard(p, jpeg_header, jpegs, labels); }},
      {"jpeg, variable-length rows",
       [&](const std::string& p) {
         data::write_jpeg_shard(p, jpeg_header, jpegs, labels, {true, 0, 0});
       }},
  };
  const auto path = [](std::size_t i, char which) { return kPath + "." + std::to_string(i) + which; };
  for (std::size_t i = 0; i < cases.size(); ++i) cases[i].write(path(i, 'a'));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // object times have whole seconds
  for (std::size_t i = 0; i < cases.size(); ++i) cases[i].write(path(i, 'b'));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].what);
    CHECK(fs::file_size(path(i, 'a')) == fs::file_size(path(i, 'b')));
    CHECK(data::file_checksum(path(i, 'a')) == data::file_checksum(path(i, 'b')));
    fs::remove(path(i, 'a'));
    fs::remove(path(i, 'b'));
  }
}
