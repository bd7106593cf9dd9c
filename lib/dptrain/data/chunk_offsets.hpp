#pragma once
// Where each sample of a shard's `images` (or packed `jpeg_bytes`) dataset lies in the file, so that sample bytes can
// be read with pread outside the process-wide HDF5 lock (Debian's HDF5 is not thread-safe; every H5Dread serialises the
// loader's threads). This works for the layouts our converter writes (uint8 and contiguous; earlier converters wrote
// raw images one per unfiltered chunk, which is read directly too). Any other layout (several images per chunk, gzip,
// a user block) gets a reason and is read through H5Dread instead.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dptrain::data {

struct ChunkOffsets {
  std::vector<std::uint64_t> offsets;  // per sample, its first byte in the file; empty: not readable directly
  std::string fallback_reason;         // why not, when offsets is empty
  const char* direct_path = nullptr;   // how the offsets were found, when not empty (kDirect*ReadPath)
  bool direct() const { return !offsets.empty(); }
};

// The read paths a direct reader names (in logs and `data verify`).
inline constexpr const char* kDirectReadPath = "pread of the contiguous images";
inline constexpr const char* kDirectChunkReadPath = "pread at chunk offsets";
inline constexpr const char* kDirectJpegReadPath = "pread of the packed JPEG bytes";

// Above this many images a shard's chunks are not looked up one by one with an HDF5 older than
// 1.14.3 (each look-up walks the chunk index, so the whole costs time quadratic in the images: about
// a second at 15,000); such a shard is read through H5Dread instead.
inline constexpr std::int64_t kMaxChunkLookups = 4096;

// Where every sample of a raw `dataset` (N x H x W x C uint8) lies (under the caller's HDF5 lock):
// sample i at `i * sample_bytes` of a contiguous, allocated dataset (the converter's layout), or, for
// a chunked one (earlier converters), in its own unfiltered chunk of exactly H*W*C bytes, each looked
// up and checked. Everything must lie inside a file of `file_size`.
ChunkOffsets find_raw_offsets(hid_t file, hid_t dataset, std::int64_t samples, std::uint64_t sample_bytes,
                              std::uint64_t file_size);

// The same for packed JPEG bytes (under the caller's HDF5 lock): sample i is bytes [starts[i],
// starts[i+1]) of the 1-D uint8 dataset `dataset`, which must be contiguous (no chunks, filters or
// external storage), allocated, and inside a file of `file_size` without a user block. `starts` has
// been checked already (ascending, from 0 to the dataset's length).
ChunkOffsets find_jpeg_offsets(hid_t file, hid_t dataset, const std::vector<std::uint64_t>& starts,
                               std::uint64_t file_size);

}  // namespace dptrain::data
