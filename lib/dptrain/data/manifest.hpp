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
