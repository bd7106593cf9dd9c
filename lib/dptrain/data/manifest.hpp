#pragma once
// manifest.json: what a dataset directory holds. Rank 0 reads it and broadcasts it, so no rank needs
// to open every shard at start-up. Documented in datasets/README.md.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dptrain::data {

inline constexpr const char* kManifestFormat = "dptrain-dataset";
inline constexpr int kManifestVersion = 1;

// Upper bounds a manifest is checked against before anything is sized from it: far above any real
// dataset (ImageNet-21k has 21,841 classes and 14 million images; images are at most a few thousand
// pixels a side for a CNN), and low enough that a damaged or crafted manifest cannot make a reader
// allocate terabytes.
struct ManifestLimits {
  static constexpr std::int64_t file_bytes = std::int64_t{256} << 20;  // manifest.json itself
  static constexpr int side = 16384;                                   // height and width
  static constexpr std::int64_t classes = 1 << 20;
  static constexpr std::int64_t shards = 1 << 20;  // per split
  static constexpr std::int64_t shard_samples = std::int64_t{1} << 24;
  static constexpr std::int64_t split_samples = std::int64_t{1} << 36;
};

struct ClassInfo {
  int id = 0;
  std::string key;   // the folder name (an ImageNet wnid), or the id for Fashion-MNIST
  std::string name;  // human-readable
};

struct ShardInfo {
  std::string file;  // relative to the dataset directory
  std::int64_t samples = 0;
  std::int64_t first_sample = 0;  // global index of the shard's first sample within its split
  std::string checksum;           // "crc32:xxxxxxxx" of the whole file
};

struct SplitInfo {
  std::int64_t samples = 0;
  std::vector<ShardInfo> shards;
};

struct Manifest {
  std::string name;
  std::vector<ClassInfo> classes;
  int height = 0, width = 0, channels = 0;
  std::string encoding = "raw";             // "raw" (uint8 HxWxC) or "jpeg"
  std::vector<double> mean, stddev;         // per channel, on the 0-255 scale
  std::map<std::string, SplitInfo> splits;  // "train", "validation"

  // Reads and validates DIR/manifest.json; every problem is an Error naming the file and the field.
  static Manifest read(const std::string& directory);
  static Manifest parse(const std::string& json_text, const std::string& path_for_errors);
  std::string to_json() const;
  // Writes DIR/manifest.json atomically (a temporary file renamed into place).
  void write(const std::string& directory) const;

  const SplitInfo& split(const std::string& name) const;
  int class_count() const { return static_cast<int>(classes.size()); }
};

// "train-00003-of-01024.h5"
std::string shard_file_name(const std::string& split, int index, int count);
// "crc32:xxxxxxxx" of a whole file.
std::string file_checksum(const std::string& path);

}  // namespace dptrain::data
