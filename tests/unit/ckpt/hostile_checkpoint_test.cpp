// Checkpoints that are damaged or crafted: the same attribute and dataset checks as shards, and
// `--resume auto` skips such a file with a warning, exactly like a truncated one.
#include <catch2/catch.hpp>
#include <filesystem>

#include "ckpt_testing.hpp"
#include "dptrain/ckpt/checkpoint_directory.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/hdf5/handle.hpp"
#include "support/error_testing.hpp"
#include "support/hdf5_surgery.hpp"

using namespace dptrain;
using namespace dptrain::testing;
using Catch::Matchers::Contains;

namespace {
// The attribute the reader looks at before the tensor: a replacement keeps layer1's place (index 1).
void give_index(hid_t file, const std::string& name) {
  h5::Handle set(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  REQUIRE(set.id() >= 0);
  h5::write_attribute(set.id(), "index", std::int64_t{1});
}
}  // namespace

TEST_CASE("a crafted checkpoint is refused naming the file, and resume auto skips it", "[ckpt][hostile]") {
  ScratchDirectory dir("ckpt-hostile");
  const std::string older = dir.file("ckpt-000000001.h5"), newest = dir.file("ckpt-000000002.h5");
  ckpt::write_checkpoint_file(older, synthetic_state(1));
  ckpt::write_checkpoint_file(newest, synthetic_state(2));
  std::string expected;
  SECTION("a /progress attribute holding 4,096 values") {
    replace_attribute_with_array(newest, "/progress", "global_step", 4096);
    expected = "'global_step' holds 4096 values, not one";
  }
  SECTION("a format version beyond int64") {
    const std::uint64_t huge = ~std::uint64_t{0};
    replace_attribute_with(newest, "/", "format_version", H5T_NATIVE_UINT64, &huge);
    expected = "'format_version' is not a signed integer";
  }
  SECTION("a weight that is a link into another file") {
    replace_dataset(newest, "/params/layer1/weight", [&](hid_t file, const std::string& name) {
      create_external_link(file, name, older, "/params/layer1/weight");
    });
    expected = "'/params/layer1/weight' is a link into another file (" + older + ":/params/layer1/weight)";
  }
  SECTION("the parameters group a link into another checkpoint") {
    replace_dataset(newest, "/params",
                    [&](hid_t file, const std::string& name) { create_external_link(file, name, older, "/params"); });
    expected = "'/params' is a link into another file (" + older + ":/params)";
  }
  SECTION("the momentum group a soft link to the parameters") {
    replace_dataset(newest, "/optimizer/momentum",
                    [&](hid_t file, const std::string& name) { create_soft_link(file, name, "/params"); });
    expected = "'/optimizer/momentum' is a soft link to '/params'";
  }
  SECTION("a link at the root the reader never reads") {
    edit_file(newest, [&](hid_t file) { create_external_link(file, "notes", older, "/progress"); });
    expected = "'/notes' is a link into another file";
  }
  SECTION("a virtual dataset the reader never reads") {
    edit_file(newest, [&](hid_t file) {
      create_virtual_dataset(file, "/progress/extra", {8}, older, "/params/layer1/weight");
    });
    expected = "dataset '/progress/extra' is a virtual dataset";
  }
  SECTION("a weight whose bytes are in an external file") {
    replace_dataset(newest, "/params/layer1/weight", [&](hid_t file, const std::string& name) {
      create_external_storage(file, name, H5T_IEEE_F32LE, {1000}, dir.file("weights.bin"));
      give_index(file, name);
    });
    expected = "keeps its data in external files";
  }
  SECTION("a weight of 2^40 floats that were never written") {
    replace_dataset(newest, "/params/layer1/weight", [&](hid_t file, const std::string& name) {
      create_dataset(file, name, H5T_IEEE_F32LE, {hsize_t{1} << 40}, nullptr, {1 << 20});
      give_index(file, name);
    });
    expected = "chunks written";
  }
  SECTION("a weight stored as float64") {
    const std::vector<double> values(1000, 0.5);
    replace_dataset(newest, "/params/layer1/weight", [&](hid_t file, const std::string& name) {
      create_dataset(file, name, H5T_IEEE_F64LE, {1000}, values.data());
      give_index(file, name);
    });
    expected = "is not float32";
  }
  CHECK_THAT(error_of([&] { ckpt::read_checkpoint(newest); }), Contains(newest) && Contains(expected));
  std::vector<std::string> warnings;
  const auto found = ckpt::find_resume_checkpoint(dir.path(), warnings);
  REQUIRE(found);
  CHECK(found->state.progress.global_step == 1);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Contains(newest) && Contains(expected));
}
