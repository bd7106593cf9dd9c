// The rule for every HDF5 file we read: the file holds every object it names. A link of any kind
// other than a hard link, or a dataset whose bytes live elsewhere, is refused at open, at the root,
// inside a group and deep inside one, whether or not a reader would ever touch it.
#include <catch2/catch.hpp>
#include <fstream>

#include "dptrain/hdf5/checks.hpp"
#include "dptrain/hdf5/handle.hpp"
#include "support/error_testing.hpp"
#include "support/hdf5_surgery.hpp"
#include "support/temp_dir.hpp"

using namespace dptrain;
using namespace dptrain::testing;
using Catch::Matchers::Contains;

namespace {
// /top (4 floats), /a/b/d (4 floats), every value written.
std::string good_file(const TempDir& dir, const std::string& name) {
  const std::string path = (dir.path / name).string();
  h5::Handle file = h5::create_file(path);
  const float values[4] = {1, 2, 3, 4};
  create_dataset(file.id(), "/top", H5T_IEEE_F32LE, {4}, values);
  create_dataset(file.id(), "/a/b/d", H5T_IEEE_F32LE, {4}, values);
  file.close();
  return path;
}

std::string open_error(const std::string& path) {
  return error_of([&] { h5::open_file(path); });
}
}  // namespace

TEST_CASE("a file that holds all it names opens, hard links to one group twice included", "[hdf5]") {
  TempDir dir("dptrain_self_contained");
  const std::string path = good_file(dir, "good.h5");
  edit_file(path, [](hid_t file) {
    REQUIRE(H5Lcreate_hard(file, "/a/b", file, "/again", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    REQUIRE(H5Lcreate_hard(file, "/a", file, "/a/b/up", H5P_DEFAULT, H5P_DEFAULT) >= 0);  // a cycle
  });
  CHECK(open_error(path).empty());
}

TEST_CASE("links out of the file and foreign storage are refused at every level", "[hdf5][hostile]") {
  TempDir dir("dptrain_self_contained");
  const std::string path = good_file(dir, "file.h5");
  const std::string other = good_file(dir, "other.h5");
  const std::string level = GENERATE(as<std::string>{}, "/x", "/a/x", "/a/b/x");
  SECTION("a link into another file") {
    edit_file(path, [&](hid_t file) { create_external_link(file, level, other, "/top"); });
    CHECK_THAT(open_error(path),
               Contains(path) && Contains("'" + level + "' is a link into another file (" + other + ":/top)"));
  }
  SECTION("a link into another file that replaces a whole group") {
    const std::string group = level == "/x" ? "/a" : "/a/b";
    replace_dataset(path, group,
                    [&](hid_t file, const std::string& name) { create_external_link(file, name, other, group); });
    CHECK_THAT(open_error(path), Contains("'" + group + "' is a link into another file"));
  }
  SECTION("a soft link, even to an object of this file") {
    edit_file(path, [&](hid_t file) { create_soft_link(file, level, "/top"); });
    CHECK_THAT(open_error(path), Contains("'" + level + "' is a soft link to '/top'"));
  }
  SECTION("a dangling soft link") {
    edit_file(path, [&](hid_t file) { create_soft_link(file, level, "/nowhere"); });
    CHECK_THAT(open_error(path), Contains("'" + level + "' is a soft link to '/nowhere'"));
  }
  SECTION("a virtual dataset") {
    edit_file(path, [&](hid_t file) { create_virtual_dataset(file, level, {4}, other, "/top"); });
    CHECK_THAT(open_error(path), Contains(path) && Contains("dataset '" + level + "' is a virtual dataset"));
  }
  SECTION("a dataset through a filter this HDF5 cannot decode") {
    create_dataset_through_missing_filter(path, level, {4}, 32000);
    CHECK_THAT(open_error(path), Contains(path) && Contains("dataset '" + level +
                                                            "' is stored through HDF5 filter "
                                                            "32000 (LZF), which this HDF5 library cannot decode"));
  }
  SECTION("a dataset kept in an external file") {
    const std::string raw = (dir.path / "raw.bin").string();
    std::ofstream(raw, std::ios::binary) << std::string(16, '\x01');
    edit_file(path, [&](hid_t file) { create_external_storage(file, level, H5T_IEEE_F32LE, {4}, raw); });
    CHECK_THAT(open_error(path), Contains("dataset '" + level + "' keeps its data in external files"));
  }
}
