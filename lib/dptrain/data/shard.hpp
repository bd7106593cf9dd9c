#pragma once
// One HDF5 shard: `images` (uint8 N x H x W x C, one chunk per image) or `jpeg` (variable-length
// bytes), `labels` (int32 N), and root attributes that repeat the geometry, the split, the shard's
// index and its first global sample, so a shard describes itself. Documented in datasets/README.md.
#include <cstdint>
#include <string>
#include <vector>

#include "dptrain/data/hdf5_handle.hpp"

namespace dptrain::data {

inline constexpr const char* kShardFormat = "dptrain-shard";
inline constexpr int kShardVersion = 1;

struct ShardHeader {
  std::string split;
  std::int64_t shard_index = 0, shard_count = 0;
  std::int64_t first_sample = 0, samples = 0;
  std::int64_t height = 0, width = 0, channels = 0;
  std::string encoding = "raw";
  std::int64_t classes = 0;
  bool operator==(const ShardHeader&) const = default;
};

// Writes a complete shard to `path` (through `path.tmp` and a rename, so a crash never leaves a
// half-written shard under the final name). Raw: `pixels` holds samples*H*W*C bytes.
void write_raw_shard(const std::string& path, const ShardHeader& header, const std::uint8_t* pixels,
                     const std::int32_t* labels);
void write_jpeg_shard(const std::string& path, const ShardHeader& header,
                      const std::vector<std::vector<std::uint8_t>>& jpegs, const std::int32_t* labels);

// Reads one shard after checking every attribute and size against what the manifest says, before
// allocating anything; a mismatch is an Error naming the file and the field.
class ShardReader {
 public:
  ShardReader(const std::string& path, const ShardHeader& expected, std::size_t cache_bytes = 8 << 20);
  const ShardHeader& header() const { return header_; }
  const std::vector<std::int32_t>& labels() const { return labels_; }
  // Sample i (0-based within the shard) as H*W*C bytes (raw shards).
  void read_image(std::int64_t i, std::uint8_t* out) const;
  // Sample i's encoded bytes (jpeg shards).
  std::vector<std::uint8_t> read_jpeg(std::int64_t i) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  ShardHeader header_;
  h5::Handle file_, data_;
  std::vector<std::int32_t> labels_;
};

// The header stored in a shard file, read without validation (for `dptrain data verify`).
ShardHeader read_shard_header(const std::string& path);

}  // namespace dptrain::data
