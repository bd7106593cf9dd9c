#pragma once
// A tiny learnable dataset for tests that run the real loader and trainer: raw 28x28 grey images of
// `classes` classes (a bright bar whose row depends on the class, plus noise), a train split in two
// shards and a validation split, written with the same shard writer and manifest as the converter.
#include <cstdint>
#include <string>

#include "dptrain/data/manifest.hpp"

namespace dptrain::testing {

struct TinyDataset {
  int size = 28;
  int classes = 4;
  std::int64_t train = 96, validation = 32;
};

data::Manifest write_tiny_dataset(const std::string& directory, const TinyDataset& spec = {});

}  // namespace dptrain::testing
