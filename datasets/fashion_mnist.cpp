#include "datasets/fashion_mnist.hpp"

#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "datasets/previous_manifest.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/data/shard.hpp"

namespace dptrain::datasets {
namespace {
namespace fs = std::filesystem;

const char* const kClassNames[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                     "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

// The whole decompressed content of a .gz file.
std::vector<std::uint8_t> read_gzip(const std::string& path) {
  DPTRAIN_CHECK(fs::exists(path), path,
                ": file not found (install Debian's dataset-fashion-mnist, or give the "
                "folder with the four IDX .gz files)");
  gzFile file = gzopen(path.c_str(), "rb");
  DPTRAIN_CHECK(file != nullptr, path, ": cannot open (", std::strerror(errno), ")");
  std::vector<std::uint8_t> bytes;
  std::vector<std::uint8_t> buffer(1 << 20);
  int got = 0;
  while ((got = gzread(file, buffer.data(), static_cast<unsigned>(buffer.size()))) > 0) {
    bytes.insert(bytes.end(), buffer.begin(), buffer.begin() + got);
  }
  int error = Z_OK;
  const std::string message = got < 0 ? gzerror(file, &error) : "";
  gzclose(file);
  DPTRAIN_CHECK(got == 0, path, ": not a readable gzip file (", message, ")");
  return bytes;
}

std::uint32_t big_endian(const std::vector<std::uint8_t>& b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) | (std::uint32_t{b[at + 2]} << 8) | b[at + 3];
}
}  // namespace

IdxImages read_idx_pair(const std::string& images_gz, const std::string& labels_gz) {
  const auto images = read_gzip(images_gz);
  const auto labels = read_gzip(labels_gz);
  DPTRAIN_CHECK(images.size() >= 16 && big_endian(images, 0) == 0x803, images_gz, ": not an IDX image file (magic)");
  DPTRAIN_CHECK(labels.size() >= 8 && big_endian(labels, 0) == 0x801, labels_gz, ": not an IDX label file (magic)");
  IdxImages out;
  out.count = static_cast<int>(big_endian(images, 4));
  out.rows = static_cast<int>(big_endian(images, 8));
  out.cols = static_cast<int>(big_endian(images, 12));
  const std::size_t per_image = static_cast<std::size_t>(out.rows) * static_cast<std::size_t>(out.cols);
  DPTRAIN_CHECK(images.size() == 16 + per_image * static_cast<std::size_t>(out.count), images_gz, ": holds ",
                images.size() - 16, " bytes of pixels, not ", out.count, " images of ", out.rows, "x", out.cols,
                " (truncated?)");
  DPTRAIN_CHECK(static_cast<int>(big_endian(labels, 4)) == out.count && labels.size() == 8 + std::size_t(out.count),
                labels_gz, ": does not hold one label for each of the ", out.count, " images");
  out.pixels.assign(images.begin() + 16, images.end());
  out.labels.resize(static_cast<std::size_t>(out.count));
  for (int i = 0; i < out.count; ++i) {
    out.labels[static_cast<std::size_t>(i)] = labels[8 + static_cast<std::size_t>(i)];
    DPTRAIN_CHECK(out.labels[static_cast<std::size_t>(i)] < 10, labels_gz, ": image ", i, " has label ",
                  out.labels[static_cast<std::size_t>(i)], ", outside the ten classes");
  }
  return out;
}

namespace {
// Each shard `manifest` lists that is missing or whose checksum is not the listed one, with why.
std::vector<std::string> damaged_shards(const std::string& output, const data::Manifest& manifest) {
  std::vector<std::string> damaged;
  for (const auto& [name, split] : manifest.splits) {
    for (const data::ShardInfo& shard : split.shards) {
      const std::string path = (fs::path(output) / shard.file).string();
      if (!fs::exists(path)) {
        damaged.push_back(path + " is missing");
        continue;
      }
      const std::string checksum = data::file_checksum(path);
      if (checksum != shard.checksum) {
        damaged.push_back(path + " has checksum " + checksum + ", not the manifest's " + shard.checksum +
                          " (damaged or truncated)");
      }
    }
  }
  return damaged;
}

data::SplitInfo write_split(const std::string& output, const std::string& split, const IdxImages& idx, int shards) {
  DPTRAIN_CHECK(shards >= 1 && shards <= idx.count, "cannot cut ", idx.count, " images into ", shards, " shards");
  data::SplitInfo info;
  info.samples = idx.count;
  const std::size_t per_image = static_cast<std::size_t>(idx.rows * idx.cols);
  std::int64_t first = 0;
  for (int s = 0; s < shards; ++s) {
    const std::int64_t end = static_cast<std::int64_t>(idx.count) * (s + 1) / shards;
    data::ShardHeader h{split, s, shards, first, end - first, idx.rows, idx.cols, 1, "raw", 10};
    const std::string file = data::shard_file_name(split, s, shards);
    const std::string path = (fs::path(output) / file).string();
    data::write_raw_shard(path, h, idx.pixels.data() + static_cast<std::size_t>(first) * per_image,
                          idx.labels.data() + first);
    info.shards.push_back({file, end - first, first, data::file_checksum(path)});
    first = end;
  }
  return info;
}
}  // namespace

long convert_fashion_mnist(const std::string& source, const std::string& output, FashionMnistOptions options) {
  const fs::path src(source);
  if (fs::exists(fs::path(output) / "manifest.json")) {
    const data::Manifest existing = data::Manifest::read(output);
    if (existing.name == "fashion-mnist") {
      // Done only if every shard it lists is there with its checksum; otherwise all of it is written
      // again from the source (a few seconds), so no damaged shard and no statistics of one remain.
      std::vector<std::string> damaged = damaged_shards(output, existing);
      if (damaged.empty()) {
        std::cerr << "dptrain data: " << output << " already holds Fashion-MNIST, every shard intact; nothing to do\n";
        return static_cast<long>(existing.split("train").samples + existing.split("validation").samples);
      }
      for (const std::string& why : damaged) std::cerr << "dptrain data: note: " << why << "\n";
      std::cerr << "dptrain data: converting Fashion-MNIST into " << output << " again\n";
    }
  }
  set_aside_manifest(output);
  const IdxImages train =
      read_idx_pair((src / "train-images-idx3-ubyte.gz").string(), (src / "train-labels-idx1-ubyte.gz").string());
  const IdxImages test =
      read_idx_pair((src / "t10k-images-idx3-ubyte.gz").string(), (src / "t10k-labels-idx1-ubyte.gz").string());
  DPTRAIN_CHECK(train.rows == test.rows && train.cols == test.cols, source,
                ": training and test images differ in size");
  fs::create_directories(output);

  data::Manifest m;
  m.name = "fashion-mnist";
  m.height = train.rows;
  m.width = train.cols;
  m.channels = 1;
  m.encoding = "raw";
  for (int c = 0; c < 10; ++c) m.classes.push_back({c, std::to_string(c), kClassNames[c]});
  // Mean and standard deviation of the training pixels, on the 0-255 scale.
  double sum = 0, squares = 0;
  for (std::uint8_t p : train.pixels) {
    sum += p;
    squares += static_cast<double>(p) * p;
  }
  const double n = static_cast<double>(train.pixels.size());
  m.mean = {sum / n};
  m.stddev = {std::sqrt(squares / n - (sum / n) * (sum / n))};
  m.splits["train"] = write_split(output, "train", train, options.train_shards);
  m.splits["validation"] = write_split(output, "validation", test, options.validation_shards);
  m.write(output);  // last: a directory with a manifest is a complete conversion
  forget_previous_manifest(output);
  return train.count + test.count;
}

}  // namespace dptrain::datasets
