#pragma once
// A tiny learnable dataset for tests that run the real loader and trainer: raw 28x28 grey images of
// `classes` classes (a bright bar whose row depends on the class, plus noise), a train split in two
// shards and a validation split, written with the same shard writer and manifest as the converter.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dptrain/data/loader.hpp"
#include "dptrain/data/manifest.hpp"

namespace dptrain::testing {

struct TinyDataset {
  int size = 28;
  int classes = 4;
  std::int64_t train = 96, validation = 32;
};

data::Manifest write_tiny_dataset(const std::string& directory, const TinyDataset& spec = {});

// The train split of a test dataset, in shards of `sizes` samples; classes are named "0", "1", ...
struct ShardedDataset {
  std::string name = "test";
  int height = 8, width = 8, channels = 3, classes = 3;
  std::string encoding = "raw";
  std::vector<double> mean, stddev;  // per channel; empty: 0 and 1
  std::vector<std::int64_t> sizes;
};

// Writes the dataset's manifest into `directory`, and each shard through `write_shard(path,
// header)` (which writes the file; its checksum is taken after).
data::Manifest write_sharded_dataset(
    const std::string& directory, const ShardedDataset& spec,
    const std::function<void(const std::string&, const data::ShardHeader&)>& write_shard);

// Two epochs and one step of a loader's batches, each as its image bytes followed by its label
// bytes: what two read paths or layouts must agree on bit for bit. `read_path`: the loader's, after.
std::vector<std::vector<std::uint8_t>> batch_bytes(const data::Manifest& manifest, const std::string& directory,
                                                   const data::LoaderConfig& config, std::string* read_path = nullptr);

}  // namespace dptrain::testing
