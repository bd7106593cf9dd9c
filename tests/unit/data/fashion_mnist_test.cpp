// Converts the real Fashion-MNIST (Debian's dataset-fashion-mnist) and reads every sample back
// against the IDX source, bit for bit.
#include "datasets/fashion_mnist.hpp"

#include <catch2/catch.hpp>
#include <filesystem>

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
  std::filesystem::remove_all(out);
}
