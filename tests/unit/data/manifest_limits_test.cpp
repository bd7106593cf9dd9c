// A manifest is bounded before anything is sized from it: geometry, class and shard counts, sample
// counts and the file's own size, each refused with one sentence naming the file.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dptrain/data/manifest.hpp"
#include "support/error_testing.hpp"
#include "support/temp_dir.hpp"

using namespace dptrain;
using namespace dptrain::data;
using Catch::Matchers::Contains;
using testing::error_of;

namespace {
nlohmann::json good_manifest() {
  Manifest m;
  m.name = "limits";
  m.height = m.width = 8;
  m.channels = 1;
  m.encoding = "raw";
  m.mean = {0};
  m.stddev = {1};
  m.classes = {ClassInfo{0, "a", "a"}, ClassInfo{1, "b", "b"}};
  m.splits["train"] = SplitInfo{10, {ShardInfo{"train-00000-of-00001.h5", 10, 0, "crc32:00000000"}}};
  return nlohmann::json::parse(m.to_json());
}

std::string parse_error(const nlohmann::json& j) {
  return error_of([&] { Manifest::parse(j.dump(), "m.json"); });
}
}  // namespace

TEST_CASE("a manifest within the limits parses", "[data][manifest]") { CHECK(parse_error(good_manifest()) == ""); }

TEST_CASE("a manifest beyond the limits is refused before anything is sized from it", "[data][manifest]") {
  nlohmann::json j = good_manifest();
  SECTION("images too large") {
    j["image"]["height"] = ManifestLimits::side + 1;
    CHECK_THAT(parse_error(j), Contains("m.json") && Contains("larger than the 16384 pixels"));
  }
  SECTION("too many classes") {
    nlohmann::json classes = nlohmann::json::array();
    for (int k = 0; k < ManifestLimits::classes + 1; ++k) classes.push_back({{"id", k}, {"key", "k"}, {"name", "n"}});
    j["classes"] = classes;
    CHECK_THAT(parse_error(j), Contains("at most 1048576 classes"));
  }
  SECTION("a shard of too many samples") {
    const std::int64_t huge = ManifestLimits::shard_samples + 1;
    j["splits"]["train"]["samples"] = huge;
    j["splits"]["train"]["shards"][0]["samples"] = huge;
    CHECK_THAT(parse_error(j), Contains("more than the 16777216 a shard may hold"));
  }
  SECTION("a split of a negative or absurd sample count") {
    j["splits"]["train"]["samples"] = std::int64_t{1} << 50;
    CHECK_THAT(parse_error(j), Contains("split 'train' says"));
    j["splits"]["train"]["samples"] = -5;
    CHECK_THAT(parse_error(j), Contains("split 'train' says -5 samples"));
  }
  SECTION("a mean that is not a number (how JSON writes NaN and infinity)") {
    j["mean"] = {nullptr};
    CHECK_THAT(parse_error(j), Contains("'mean'"));
  }
}

TEST_CASE("a manifest file larger than any manifest is refused before it is read", "[data][manifest]") {
  testing::TempDir dir("dptrain_manifest_limits");
  {
    std::ofstream out(dir.path / "manifest.json");
    out << good_manifest().dump();
  }
  std::filesystem::resize_file(dir.path / "manifest.json", ManifestLimits::file_bytes + 1);  // sparse
  CHECK_THAT(error_of([&] { Manifest::read(dir.path.string()); }),
             Contains("manifest.json") && Contains("more than a dataset manifest"));
}
