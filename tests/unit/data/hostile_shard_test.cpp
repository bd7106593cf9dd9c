// Shards that are damaged or crafted: every attribute and dataset is checked for class, size, shape
// and storage before it is read, and refused with one sentence naming the file (never a crash, never
// pixels converted or made up by HDF5).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "dptrain/data/shard.hpp"
#include "dptrain/hdf5/handle.hpp"
#include "support/error_testing.hpp"
#include "support/hdf5_surgery.hpp"
#include "support/temp_dir.hpp"

using namespace dptrain;
using namespace dptrain::testing;
using Catch::Matchers::Contains;

namespace {
// 4 samples of 2x2x1, raw, in the converter's layout (contiguous).
const data::ShardHeader kHeader{"train", 0, 1, 0, 4, 2, 2, 1, "raw", 10};

std::string good_shard(const TempDir& dir) {
  const std::string path = (dir.path / "train-00000-of-00001.h5").string();
  std::vector<std::uint8_t> pixels(16);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 11);
  const std::int32_t labels[4] = {1, 2, 3, 4};
  data::write_raw_shard(path, kHeader, pixels.data(), labels);
  return path;
}

std::string open_error(const std::string& path) {
  return error_of([&] { data::ShardReader reader(path, kHeader); });
}
}  // namespace

TEST_CASE("a header attribute that is an array is refused, not written past a scalar", "[data][hostile]") {
  TempDir dir("dptrain_hostile_shard");
  const std::string path = good_shard(dir);
  const std::string attribute = GENERATE(as<std::string>{}, "version", "samples", "height");
  replace_attribute_with_array(path, "/", attribute, 4096);
  const std::string error = error_of([&] { data::read_shard_header(path); });
  CHECK_THAT(error, Contains(path) && Contains("'" + attribute + "'") && Contains("4096 values, not one"));
  CHECK_THAT(open_error(path), Contains("4096 values"));
}

TEST_CASE("header attributes of the wrong type or range are refused", "[data][hostile]") {
  TempDir dir("dptrain_hostile_shard");
  const std::string path = good_shard(dir);
  SECTION("an unsigned 64-bit version beyond int64") {
    const std::uint64_t huge = ~std::uint64_t{0};
    replace_attribute_with(path, "/", "version", H5T_NATIVE_UINT64, &huge);
    CHECK_THAT(error_of([&] { data::read_shard_header(path); }),
               Contains("'version' is not a signed integer of at most 64 bits"));
  }
  SECTION("a float where an integer belongs") {
    const double samples = 4.0;
    replace_attribute_with(path, "/", "samples", H5T_NATIVE_DOUBLE, &samples);
    CHECK_THAT(open_error(path), Contains("'samples' is not an integer"));
  }
}

TEST_CASE("pixels and labels must be stored as the types we write", "[data][hostile]") {
  TempDir dir("dptrain_hostile_shard");
  const std::string path = good_shard(dir);
  SECTION("float32 images (HDF5 would read them as zeros)") {
    const std::vector<float> values(16, 200.f);
    replace_dataset(path, "images", [&](hid_t file, const std::string& name) {
      create_dataset(file, name, H5T_NATIVE_FLOAT, {4, 2, 2, 1}, values.data(), {1, 2, 2, 1});
    });
    CHECK_THAT(open_error(path), Contains(path) && Contains("'images' is not stored as unsigned 8-bit integers"));
  }
  SECTION("signed 8-bit images") {
    const std::vector<std::int8_t> values(16, -3);
    replace_dataset(path, "images", [&](hid_t file, const std::string& name) {
      create_dataset(file, name, H5T_NATIVE_INT8, {4, 2, 2, 1}, values.data(), {1, 2, 2, 1});
    });
    CHECK_THAT(open_error(path), Contains("not stored as unsigned 8-bit integers"));
  }
  SECTION("float labels") {
    const std::vector<float> values{1.5f, 2.f, 3.f, 4.f};
    replace_dataset(path, "labels", [&](hid_t file, const std::string& name) {
      create_dataset(file, name, H5T_NATIVE_FLOAT, {4}, values.data());
    });
    CHECK_THAT(open_error(path), Contains("'labels' is not stored as signed 32- or 64-bit integers"));
  }
  SECTION("int64 labels are accepted") {
    const std::vector<std::int64_t> values{1, 2, 3, 4};
    replace_dataset(path, "labels", [&](hid_t file, const std::string& name) {
      create_dataset(file, name, H5T_NATIVE_INT64, {4}, values.data());
    });
    CHECK(open_error(path) == "");
  }
}

TEST_CASE("chunks never written are an error, not zeros", "[data][hostile]") {
  TempDir dir("dptrain_hostile_shard");
  const std::string path = good_shard(dir);
  replace_dataset(path, "images", [&](hid_t file, const std::string& name) {
    create_dataset(file, name, H5T_STD_U8LE, {4, 2, 2, 1}, nullptr, {1, 2, 2, 1});
    // Only sample 1 is written.
    h5::Handle set(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
    h5::Handle space(H5Dget_space(set.id()), H5Sclose);
    const hsize_t start[4] = {1, 0, 0, 0}, count[4] = {1, 2, 2, 1};
    REQUIRE(H5Sselect_hyperslab(space.id(), H5S_SELECT_SET, start, nullptr, count, nullptr) >= 0);
    h5::Handle memory(H5Screate_simple(4, count, nullptr), H5Sclose);
    const std::uint8_t pixels[4] = {9, 9, 9, 9};
    REQUIRE(H5Dwrite(set.id(), H5T_NATIVE_UINT8, memory.id(), space.id(), H5P_DEFAULT, pixels) >= 0);
  });
  CHECK_THAT(open_error(path), Contains(path) && Contains("has 1 of its 4 chunks written"));
}

TEST_CASE("external links, external storage and virtual datasets are refused", "[data][hostile]") {
  TempDir dir("dptrain_hostile_shard");
  const std::string path = good_shard(dir);
  SECTION("an external link") {
    const std::string other = (dir.path / "other.h5").string();
    std::filesystem::copy_file(path, other);
    replace_dataset(path, "images",
                    [&](hid_t file, const std::string& name) { create_external_link(file, name, other, "/images"); });
    CHECK_THAT(open_error(path),
               Contains(path) && Contains("'/images' is a link into another file (" + other + ":/images)"));
  }
  SECTION("external storage") {
    const std::string raw = (dir.path / "pixels.bin").string();
    std::ofstream(raw, std::ios::binary) << std::string(16, '\x05');
    replace_dataset(path, "images", [&](hid_t file, const std::string& name) {
      create_external_storage(file, name, H5T_STD_U8LE, {4, 2, 2, 1}, raw);
    });
    CHECK_THAT(open_error(path), Contains("keeps its data in external files"));
  }
  SECTION("images compressed with Blosc, which this HDF5 cannot decode") {
    edit_file(path, [](hid_t file) { REQUIRE(H5Ldelete(file, "images", H5P_DEFAULT) >= 0); });
    create_dataset_through_missing_filter(path, "images", {4, 2, 2, 1}, 32001);
    CHECK_THAT(open_error(path), Contains(path) && Contains("HDF5 filter 32001 (Blosc)"));
    CHECK_THAT(error_of([&] { data::read_shard_header(path); }), Contains("HDF5 filter 32001 (Blosc)"));
  }
  SECTION("a virtual dataset") {
    const std::string other = (dir.path / "other.h5").string();
    std::filesystem::copy_file(path, other);
    replace_dataset(path, "images", [&](hid_t file, const std::string& name) {
      create_virtual_dataset(file, name, {4, 2, 2, 1}, other, "/images");
    });
    CHECK_THAT(open_error(path), Contains("is a virtual dataset"));
  }
  SECTION("a link the reader never reads, at the root or deep in a group") {
    const std::string where = GENERATE(as<std::string>{}, "notes", "extra/deeper/notes");
    edit_file(path, [&](hid_t file) {
      h5::Handle extra(H5Gcreate2(file, "extra", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
      h5::Handle deeper(H5Gcreate2(extra.id(), "deeper", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
      REQUIRE(deeper.id() >= 0);
      create_soft_link(file, where, "/labels");
    });
    CHECK_THAT(open_error(path), Contains(path) && Contains("'/" + where + "' is a soft link to '/labels'"));
    CHECK_THAT(error_of([&] { data::read_shard_header(path); }), Contains("'/" + where + "' is a soft link"));
  }
}
