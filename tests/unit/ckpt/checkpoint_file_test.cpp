// The reader trusts nothing: corrupt bytes, foreign files and missing fields are one sentence naming
// the file and the field or dataset.
#include "dptrain/ckpt/checkpoint_file.hpp"

#include <catch2/catch.hpp>
#include <filesystem>

#include "ckpt_testing.hpp"
#include "dptrain/hdf5/handle.hpp"

using namespace dptrain;
using namespace dptrain::testing;

namespace {
// Where a contiguous dataset's values start in the file.
std::size_t dataset_offset(const std::string& path, const std::string& dataset) {
  h5::Handle file = h5::open_file(path);
  h5::Handle set = h5::open_dataset(file.id(), dataset, path);
  const haddr_t offset = H5Dget_offset(set.id());
  REQUIRE(offset != HADDR_UNDEF);
  return static_cast<std::size_t>(offset);
}
}  // namespace

TEST_CASE("a synthetic state reads back exactly", "[ckpt]") {
  ScratchDirectory dir("ckpt-file");
  const ckpt::TrainingState state = synthetic_state(42, 2, 500, 5);
  ckpt::write_checkpoint_file(dir.file("a.h5"), state);
  const ckpt::TrainingState read = ckpt::read_checkpoint(dir.file("a.h5"));
  REQUIRE(read.parameters.size() == 2);
  CHECK(read.parameters[1].name == "layer1/weight");
  CHECK(identical({read.parameters[0].value, read.optimizer.momentum[1].value, read.buffers[0].value},
                  {state.parameters[0].value, state.optimizer.momentum[1].value, state.buffers[0].value}));
  CHECK(read.progress.global_step == 42);
  CHECK(read.progress.schedule.milestones.empty());
}

TEST_CASE("a GPU run's tuned choices read back as written; a checkpoint without them has none", "[ckpt]") {
  ScratchDirectory dir("ckpt-tuned");
  ckpt::TrainingState state = synthetic_state(7, 1, 100, 3);
  ckpt::write_checkpoint_file(dir.file("cpu.h5"), state);
  CHECK(ckpt::read_checkpoint(dir.file("cpu.h5")).tuned_choices.empty());
  {
    h5::Handle file = h5::open_file(dir.file("cpu.h5"));
    CHECK_FALSE(h5::has_attribute(file.id(), "tuned_choices"));  // CPU checkpoints stay as they were
  }
  state.tuned_choices = R"({"format":"dptrain cuDNN convolution algorithms 1","choices":[]})";
  ckpt::write_checkpoint_file(dir.file("gpu.h5"), state);
  CHECK(ckpt::read_checkpoint(dir.file("gpu.h5")).tuned_choices == state.tuned_choices);
}

TEST_CASE("a flipped byte in a dataset fails its checksum, naming the dataset", "[ckpt]") {
  ScratchDirectory dir("ckpt-corrupt");
  const std::string path = dir.file("c.h5");
  ckpt::write_checkpoint_file(path, synthetic_state(1, 3, 1000));
  const std::string dataset = GENERATE(as<std::string>{}, "/params/layer1/weight", "/optimizer/momentum/layer2/weight",
                                       "/buffers/bn/running_mean");
  std::vector<char> bytes = read_bytes(path);
  bytes[dataset_offset(path, dataset) + 13] ^= 0x10;
  write_bytes(path, bytes);
  CHECK_THROWS_WITH(ckpt::read_checkpoint(path), Catch::Contains(path) && Catch::Contains("dataset " + dataset) &&
                                                     Catch::Contains("fails its checksum"));
}

TEST_CASE("files that are not checkpoints are refused with the path and the reason", "[ckpt]") {
  ScratchDirectory dir("ckpt-foreign");
  const std::string path = dir.file("x.h5");
  SECTION("missing") {
    CHECK_THROWS_WITH(ckpt::read_checkpoint(path), Catch::Contains(path) && Catch::Contains("cannot read"));
  }
  SECTION("zero bytes") {
    write_bytes(path, {});
    CHECK_THROWS_WITH(ckpt::read_checkpoint(path), Catch::Contains(path) && Catch::Contains("empty"));
  }
  SECTION("not HDF5") {
    write_bytes(path, std::vector<char>(4096, 'x'));
    CHECK_THROWS_WITH(ckpt::read_checkpoint(path), Catch::Contains(path) && Catch::Contains("not a readable HDF5"));
  }
  SECTION("truncated to half") {
    ckpt::write_checkpoint_file(path, synthetic_state(1));
    std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
    CHECK_THROWS_WITH(ckpt::read_checkpoint(path), Catch::Contains(path));
  }
  SECTION("an HDF5 file of another format") {
    {
      h5::Handle file = h5::create_file(path);
      h5::write_attribute(file.id(), "format", std::string("dptrain-shard"));
    }
    CHECK_THROWS_WITH(ckpt::read_checkpoint(path),
                      Catch::Contains(path) && Catch::Contains("not a dptrain checkpoint (format 'dptrain-shard')"));
  }
  SECTION("a newer format version") {
    ckpt::write_checkpoint_file(path, synthetic_state(1));
    {
      h5::Handle file(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
      REQUIRE(H5Adelete(file.id(), "format_version") >= 0);
      h5::write_attribute(file.id(), "format_version", std::int64_t{2});
    }
    CHECK_THROWS_WITH(ckpt::read_checkpoint(path), Catch::Contains(path) && Catch::Contains("format version 2"));
  }
  SECTION("a missing progress field") {
    ckpt::write_checkpoint_file(path, synthetic_state(1));
    {
      h5::Handle file(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
      REQUIRE(H5Adelete_by_name(file.id(), "progress", "samples_in_epoch", H5P_DEFAULT) >= 0);
    }
    CHECK_THROWS_WITH(ckpt::read_checkpoint(path),
                      Catch::Contains(path + " /progress: attribute 'samples_in_epoch' is missing"));
  }
  SECTION("a deleted dataset") {
    ckpt::write_checkpoint_file(path, synthetic_state(1));
    {
      h5::Handle file(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
      REQUIRE(H5Ldelete(file.id(), "params/layer0/weight", H5P_DEFAULT) >= 0);
    }
    CHECK_THROWS_WITH(ckpt::read_checkpoint(path),
                      Catch::Contains(path + " /params: holds 2 datasets but its count says 3"));
  }
}
