// Converts the real Fashion-MNIST (Debian's dataset-fashion-mnist) and reads every sample back
// against the IDX source, bit for bit.
#include "datasets/fashion_mnist.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "datasets/verify.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/data/shard.hpp"

using namespace dptrain;

TEST_CASE("Fashion-MNIST converts and reads back bit-exactly", "[data][fashion-mnist]") {
  const std::string source = datasets::kFashionMnistDefaultSource;
  if (!std::filesystem::exists(source + "/train-images-idx3-ubyte.gz")) {
    FAIL("Debian's dataset-fashion-mnist is not installed (scripts/install-deps.sh installs it)");
  }
  const auto out = std::filesystem::temp_directory_path() / "dptrain-test-fashion-mnist";
  std::filesystem::remove_all(out);
  CHECK(datasets::convert_fashion_mnist(source, out.string(), {3, 2}) == 70000);
  const data::Manifest m = data::Manifest::read(out.string());
  CHECK(m.class_count() == 10);
  CHECK(m.classes[9].name == "Ankle boot");
  CHECK(m.height == 28);
  CHECK(m.channels == 1);
  CHECK(m.mean[0] == Approx(72.94).margin(0.05));  // the published training-set mean, 0.2860 * 255
  CHECK(m.stddev[0] == Approx(90.02).margin(0.05));

  for (const auto& [split, gz] : {std::pair<std::string, std::string>{"train", "train"}, {"validation", "t10k"}}) {
    const auto idx = datasets::read_idx_pair(source + "/" + gz + "-images-idx3-ubyte.gz",
                                             source + "/" + gz + "-labels-idx1-ubyte.gz");
    const data::SplitInfo& info = m.split(split);
    REQUIRE(info.samples == idx.count);
    std::int64_t mismatches = 0, checked = 0;
    std::vector<std::uint8_t> image(28 * 28);
    for (std::size_t s = 0; s < info.shards.size(); ++s) {
      const data::ShardInfo& shard = info.shards[s];
      CHECK(data::file_checksum((out / shard.file).string()) == shard.checksum);
      const data::ShardHeader expected{split,
                                       static_cast<std::int64_t>(s),
                                       static_cast<std::int64_t>(info.shards.size()),
                                       shard.first_sample,
                                       shard.samples,
                                       28,
                                       28,
                                       1,
                                       "raw",
                                       10};
      const data::ShardReader reader((out / shard.file).string(), expected);
      for (std::int64_t i = 0; i < shard.samples; ++i) {
        const auto global = static_cast<std::size_t>(shard.first_sample + i);
        reader.read_image(i, image.data());
        mismatches +=
            !std::equal(image.begin(), image.end(), idx.pixels.begin() + static_cast<std::ptrdiff_t>(global * 784));
        mismatches += reader.labels()[static_cast<std::size_t>(i)] != idx.labels[global];
        ++checked;
      }
    }
    CHECK(checked == idx.count);
    CHECK(mismatches == 0);
  }
  // A second conversion finds the complete directory and writes nothing.
  const auto before = std::filesystem::last_write_time(out / "manifest.json");
  CHECK(datasets::convert_fashion_mnist(source, out.string()) == 70000);
  CHECK(std::filesystem::last_write_time(out / "manifest.json") == before);

  // Converting again repairs: a shard damaged in its pixels, one cut short and one missing are written
  // again (the damaged checksums are not adopted: every shard then has its manifest's checksum and
  // verify passes), and the statistics stay the same. The files' bytes hold HDF5's creation times, so
  // they are compared through verify, not with the first conversion's checksums.
  const data::SplitInfo train = m.split("train");
  const auto shard = [&](std::size_t i) { return out / train.shards[i].file; };
  {
    std::fstream damaged(shard(0), std::ios::in | std::ios::out | std::ios::binary);
    damaged.seekp(static_cast<std::streamoff>(std::filesystem::file_size(shard(0)) / 2));
    damaged.put('\x5a');
  }
  std::filesystem::resize_file(shard(1), std::filesystem::file_size(shard(1)) / 3);
  std::filesystem::remove(shard(2));
  std::vector<std::string> damaged_checksums;
  for (std::size_t i = 0; i < 2; ++i) {
    damaged_checksums.push_back(data::file_checksum(shard(i).string()));
    CHECK(damaged_checksums.back() != train.shards[i].checksum);
  }
  CHECK_FALSE(datasets::verify_dataset(out.string()).ok());
  CHECK(datasets::convert_fashion_mnist(source, out.string(), {3, 2}) == 70000);
  const data::Manifest repaired = data::Manifest::read(out.string());
  for (std::size_t i = 0; i < 3; ++i) {
    REQUIRE(std::filesystem::exists(shard(i)));
    CHECK(repaired.split("train").shards[i].checksum == data::file_checksum(shard(i).string()));
    if (i < 2) CHECK(repaired.split("train").shards[i].checksum != damaged_checksums[i]);
  }
  CHECK(datasets::verify_dataset(out.string()).ok());
  CHECK(repaired.mean == m.mean);
  CHECK(repaired.stddev == m.stddev);
  CHECK_FALSE(std::filesystem::exists(out / ".manifest-previous.json"));
  std::filesystem::remove_all(out);
}
