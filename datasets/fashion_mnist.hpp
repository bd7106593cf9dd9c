#pragma once
// Fashion-MNIST (Xiao et al. 2017) from its IDX files (gzip), as Debian's dataset-fashion-mnist
// installs them, into dptrain's HDF5 shard format: 60,000 training and 10,000 test images of 28x28x1,
// ten classes. The test set becomes the "validation" split. Samples keep the source order (the source
// is already mixed, so every shard has every class), which makes sample i of a split image i of its
// IDX file.
#include <cstdint>
#include <string>
#include <vector>

namespace dptrain::datasets {

inline constexpr const char* kFashionMnistDefaultSource = "/usr/share/datasets/fashion-mnist";

struct FashionMnistOptions {
  int train_shards = 4;
  int validation_shards = 1;
};

// Converts SRC (the folder with train-images-idx3-ubyte.gz etc.) into OUT; returns the number of
// samples written. Skips the work when OUT already holds a complete conversion.
long convert_fashion_mnist(const std::string& source, const std::string& output, FashionMnistOptions options = {});

// The IDX pair of one split, decoded: images as count x rows x cols bytes.
struct IdxImages {
  int count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;
  std::vector<std::int32_t> labels;
};
IdxImages read_idx_pair(const std::string& images_gz, const std::string& labels_gz);

}  // namespace dptrain::datasets
