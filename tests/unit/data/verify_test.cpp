// `dptrain data verify` decodes every JPEG entry (unless --quick): a damaged image, or one whose
// header disagrees with the manifest, is named with its shard and sample before training meets it.
#include "datasets/verify.hpp"

#include <catch2/catch.hpp>

#include "dptrain/data/jpeg.hpp"
#include "dptrain/data/shard.hpp"
#include "support/dataset_testing.hpp"
#include "support/temp_dir.hpp"

using namespace dptrain;
using namespace dptrain::data;
using Catch::Matchers::Contains;

namespace {
std::vector<std::uint8_t> jpeg(int side, int seed) {
  Image image{side, side, 3, {}};
  for (int i = 0; i < side * side * 3; ++i) image.pixels.push_back(static_cast<std::uint8_t>((i * 7 + seed) % 251));
  return encode_jpeg(image, 90);
}

// Two JPEG shards of 3 samples of 16x16; `bad(sample)` replaces one entry's bytes when it returns some.
Manifest write_dataset(const testing::TempDir& dir,
                       const std::function<std::vector<std::uint8_t>(std::int64_t)>& replace) {
  testing::ShardedDataset spec;
  spec.height = spec.width = 16;
  spec.encoding = "jpeg";
  spec.sizes = {3, 3};
  return testing::write_sharded_dataset(dir.path.string(), spec, [&](const std::string& path, const ShardHeader& h) {
    std::vector<std::vector<std::uint8_t>> entries;
    const std::vector<std::int32_t> labels(3, 1);
    for (std::int64_t i = 0; i < h.samples; ++i) {
      std::vector<std::uint8_t> bytes = replace(h.first_sample + i);
      entries.push_back(bytes.empty() ? jpeg(16, static_cast<int>(h.first_sample + i)) : bytes);
    }
    write_jpeg_shard(path, h, entries, labels.data());
  });
}
}  // namespace

TEST_CASE("verify decodes every JPEG entry and names a bad one's shard and sample", "[data][verify]") {
  testing::TempDir dir("dptrain_verify_test");
  std::string expected;
  SECTION("an entry that is not a JPEG") {
    write_dataset(
        dir, [](std::int64_t s) { return s == 4 ? std::vector<std::uint8_t>(100, 'x') : std::vector<std::uint8_t>{}; });
    expected = "(sample 1)";
  }
  SECTION("an entry whose header gives another size than the manifest's") {
    write_dataset(dir, [](std::int64_t s) { return s == 4 ? jpeg(24, 3) : std::vector<std::uint8_t>{}; });
    expected = "the JPEG header gives 24x24 pixels, not the 16x16";
  }
  const datasets::VerifyReport full = datasets::verify_dataset(dir.path.string());
  REQUIRE(full.problems.size() == 1);
  CHECK_THAT(full.problems[0], Contains("train-00001-of-00002.h5") && Contains(expected));
  CHECK_THAT(full.summary, Contains("JPEG entries: every one decoded"));
  const datasets::VerifyReport quick = datasets::verify_dataset(dir.path.string(), true);
  CHECK(quick.ok());
  CHECK_THAT(quick.summary, Contains("not decoded (--quick)"));
}

TEST_CASE("verify passes a good JPEG dataset with every entry decoded", "[data][verify]") {
  testing::TempDir dir("dptrain_verify_test");
  write_dataset(dir, [](std::int64_t) { return std::vector<std::uint8_t>{}; });
  const datasets::VerifyReport report = datasets::verify_dataset(dir.path.string());
  CHECK(report.ok());
  CHECK(report.samples == 6);
}
