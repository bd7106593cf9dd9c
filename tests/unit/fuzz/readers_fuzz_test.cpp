// The readers against mutants of good files. A seeded mutator flips bytes, truncates, zeroes blocks,
// turns attributes into arrays or other types, and replaces, reshapes or deletes datasets, in copies
// of a small raw dataset, a small JPEG dataset and a small checkpoint. Then `data verify`, a full pass
// of the loader, `read_checkpoint` and the resume-auto search run on each mutant in this process.
// Every one must either succeed (a flip in padding changes nothing) or throw dptrain::Error naming
// the file: never another exception, a crash or (under the asan preset) a memory error.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

#include "ckpt/ckpt_testing.hpp"
#include "datasets/verify.hpp"
#include "dptrain/ckpt/checkpoint_directory.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/data/jpeg.hpp"
#include "dptrain/data/loader.hpp"
#include "dptrain/data/shard.hpp"
#include "dptrain/hdf5/handle.hpp"
#include "support/dataset_testing.hpp"
#include "support/hdf5_surgery.hpp"
#include "support/temp_dir.hpp"

using namespace dptrain;
namespace fs = std::filesystem;

namespace {
using Rng = std::mt19937_64;

int uniform(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// The attributes and datasets a mutation may pick, per kind of file.
const std::vector<std::string> kShardAttributes = {"format",      "version",      "split",    "shard_index",
                                                   "shard_count", "first_sample", "samples",  "height",
                                                   "width",       "channels",     "encoding", "classes"};
const std::vector<std::string> kCheckpointAttributes = {"/:format",
                                                        "/:format_version",
                                                        "/:model",
                                                        "/:configuration",
                                                        "/progress:global_step",
                                                        "/progress:epoch",
                                                        "/progress:global_batch",
                                                        "/progress:lr_schedule",
                                                        "/progress:lr_milestones",
                                                        "/params:count",
                                                        "/optimizer:momentum",
                                                        "/params/layer1/weight:crc32",
                                                        "/params/layer1/weight:index"};

void flip_bytes(const std::string& path, Rng& rng) {
  std::vector<char> bytes = testing::read_bytes(path);
  const int flips = uniform(rng, 1, 8);
  for (int i = 0; i < flips; ++i) {
    bytes[static_cast<std::size_t>(uniform(rng, 0, static_cast<int>(bytes.size()) - 1))] ^=
        static_cast<char>(uniform(rng, 1, 255));
  }
  testing::write_bytes(path, bytes);
}

void zero_block(const std::string& path, Rng& rng) {
  std::vector<char> bytes = testing::read_bytes(path);
  const int start = uniform(rng, 0, static_cast<int>(bytes.size()) - 1);
  const int length = std::min(uniform(rng, 16, 4096), static_cast<int>(bytes.size()) - start);
  std::fill(bytes.begin() + start, bytes.begin() + start + length, '\0');
  testing::write_bytes(path, bytes);
}

void truncate(const std::string& path, Rng& rng) {
  fs::resize_file(path, static_cast<std::uintmax_t>(uniform(rng, 0, static_cast<int>(fs::file_size(path)) - 1)));
}

// One of the HDF5-level mutations of `path`: an attribute (`object:name`) turned into an array or a
// double, or dataset `dataset` deleted, replaced by floats or by a different shape.
void mutate_structure(const std::string& path, const std::string& object_attribute, const std::string& dataset,
                      Rng& rng) {
  const auto colon = object_attribute.find(':');
  const std::string object = colon == std::string::npos ? "/" : object_attribute.substr(0, colon);
  const std::string attribute = colon == std::string::npos ? object_attribute : object_attribute.substr(colon + 1);
  bool present = false;
  {
    h5::Handle file = h5::open_file(path);
    h5::Handle handle(H5Oopen(file.id(), object.c_str(), H5P_DEFAULT), H5Oclose);
    present = handle.id() >= 0 && h5::has_attribute(handle.id(), attribute);
  }
  REQUIRE(present);  // the list of attributes names what the writers write
  switch (uniform(rng, 0, 4)) {
    case 0: testing::replace_attribute_with_array(path, object, attribute, uniform(rng, 0, 5000)); break;
    case 1: {
      const double value = 1e300;
      testing::replace_attribute_with(path, object, attribute, H5T_NATIVE_DOUBLE, &value);
      break;
    }
    case 2: testing::replace_dataset(path, dataset, [](hid_t, const std::string&) {}); break;
    case 3: {
      const std::vector<float> values(64, 1.f);
      testing::replace_dataset(path, dataset, [&](hid_t file, const std::string& name) {
        testing::create_dataset(file, name, H5T_NATIVE_FLOAT, {64}, values.data());
      });
      break;
    }
    default: {
      const std::vector<std::uint8_t> values(6 * 7, 3);
      testing::replace_dataset(path, dataset, [&](hid_t file, const std::string& name) {
        testing::create_dataset(file, name, H5T_STD_U8LE, {6, 7}, values.data());
      });
    }
  }
}

void mutate(const std::string& path, const std::vector<std::string>& attributes, const std::string& dataset, Rng& rng) {
  switch (uniform(rng, 0, 3)) {
    case 0: flip_bytes(path, rng); break;
    case 1: truncate(path, rng); break;
    case 2: zero_block(path, rng); break;
    default:
      mutate_structure(path,
                       attributes[static_cast<std::size_t>(uniform(rng, 0, static_cast<int>(attributes.size()) - 1))],
                       dataset, rng);
  }
}

// Runs `f`; an Error must name `file`. Anything else thrown fails the test.
template <typename F>
void expect_clean(const std::string& file, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    INFO("mutant " << file);
    CHECK_THAT(e.what(), Catch::Contains(fs::path(file).filename().string()));
  }
}

data::Manifest write_dataset(const std::string& dir, const std::string& encoding) {
  testing::ShardedDataset spec;
  spec.encoding = encoding;
  spec.sizes = {6, 6};
  return testing::write_sharded_dataset(dir, spec, [&](const std::string& path, const data::ShardHeader& h) {
    std::vector<std::int32_t> labels;
    std::vector<std::uint8_t> pixels;
    std::vector<std::vector<std::uint8_t>> jpegs;
    for (std::int64_t i = 0; i < h.samples; ++i) {
      labels.push_back(static_cast<std::int32_t>(i % 3));
      data::Image image{8, 8, 3, {}};
      for (int k = 0; k < 8 * 8 * 3; ++k) image.pixels.push_back(static_cast<std::uint8_t>((k * 5 + i * 31) % 256));
      pixels.insert(pixels.end(), image.pixels.begin(), image.pixels.end());
      jpegs.push_back(data::encode_jpeg(image, 90));
    }
    if (encoding == "raw") {
      data::write_raw_shard(path, h, pixels.data(), labels.data());
    } else {
      data::write_jpeg_shard(path, h, jpegs, labels.data());
    }
  });
}

// Every sample of the train split, read and augmented by the loader (one thread).
void load_everything(const data::Manifest& m, const std::string& dir) {
  data::LoaderConfig c;
  c.training = false;
  c.batch = 4;
  c.threads = 1;
  data::Loader loader(m, dir, c);
  for (data::Batch b = loader.next(); !b.end; b = loader.next()) {
  }
}

void fuzz_dataset(const std::string& encoding, int mutants, std::uint64_t seed) {
  testing::TempDir good("dptrain_fuzz_good");
  const data::Manifest m = write_dataset(good.path.string(), encoding);
  const std::string shard = m.split("train").shards[1].file;
  const std::string dataset = encoding == "raw" ? "images" : (seed % 2 ? "jpeg_bytes" : "jpeg_offsets");
  Rng rng(seed);
  for (int i = 0; i < mutants; ++i) {
    testing::TempDir dir("dptrain_fuzz_mutant");
    for (const auto& entry : fs::directory_iterator(good.path))
      fs::copy_file(entry.path(), dir.path / entry.path().filename());
    const std::string path = (dir.path / shard).string();
    const std::vector<std::string> labels_or_data = {dataset, "labels"};
    mutate(path, kShardAttributes, labels_or_data[static_cast<std::size_t>(uniform(rng, 0, 1))], rng);
    INFO(encoding << " mutant " << i);
    const datasets::VerifyReport report = datasets::verify_dataset(dir.path.string());
    for (const std::string& problem : report.problems) CHECK_THAT(problem, Catch::Contains(shard));
    expect_clean(path, [&] { load_everything(m, dir.path.string()); });
  }
}
}  // namespace

TEST_CASE("mutants of raw shards end in success or one error naming the shard", "[fuzz]") {
  fuzz_dataset("raw", 300, 11);
}

TEST_CASE("mutants of JPEG shards end in success or one error naming the shard", "[fuzz]") {
  fuzz_dataset("jpeg", 150, 12);  // jpeg_offsets
  fuzz_dataset("jpeg", 150, 13);  // jpeg_bytes
}

TEST_CASE("mutants of checkpoints end in success or one error naming the file; resume auto skips them", "[fuzz]") {
  testing::ScratchDirectory dir("fuzz-ckpt");
  const std::string good = dir.file("good.h5"), newer = dir.file("newer.h5");
  ckpt::write_checkpoint_file(good, testing::synthetic_state(1, 3, 200));
  ckpt::write_checkpoint_file(newer, testing::synthetic_state(2, 3, 200, 7));
  Rng rng(21);
  for (int i = 0; i < 300; ++i) {
    INFO("checkpoint mutant " << i);
    testing::ScratchDirectory run("fuzz-ckpt-run");
    fs::copy_file(good, run.file("ckpt-000000001.h5"));
    const std::string mutant = run.file("ckpt-000000002.h5");
    fs::copy_file(newer, mutant);
    const std::vector<std::string> datasets = {"/params/layer1/weight", "/optimizer/momentum/layer0/weight",
                                               "/buffers/bn/running_mean"};
    mutate(mutant, kCheckpointAttributes, datasets[static_cast<std::size_t>(uniform(rng, 0, 2))], rng);
    expect_clean(mutant, [&] { ckpt::read_checkpoint(mutant); });
    // The good older checkpoint is always found: the mutant is either readable or skipped.
    std::vector<std::string> warnings;
    const auto found = ckpt::find_resume_checkpoint(run.path(), warnings);
    CHECK(found.has_value());
  }
}
