#pragma once
// Where each sample of a shard's `images` (or packed `jpeg_bytes`) dataset lies in the file, so that sample bytes can
// be read with pread outside the process-wide HDF5 lock (Debian's HDF5 is not thread-safe; every H5Dread serialises the
// loader's threads). This works for the layout our converter writes: uint8, chunked one image per chunk, no filters,
// every chunk allocated. Any other layout (several images per chunk, gzip, contiguous, a user block) gets a reason and
// is read through H5Dread instead.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dptrain::data {

struct ChunkOffsets {
  std::vector<std::uint64_t> offsets;  // per sample, its first byte in the file; empty: not readable directly
  std::string fallback_reason;         // why not, when offsets is empty
  bool direct() const { return !offsets.empty(); }
};

// Looks up (under the caller's HDF5 lock) the chunk of every sample of `dataset` (N x H x W x C) and
// checks it: one chunk per sample, unfiltered, exactly H*W*C bytes, inside a file of `file_size`.
ChunkOffsets find_chunk_offsets(hid_t file, hid_t dataset, std::int64_t samples, std::uint64_t sample_bytes,
                                std::uint64_t file_size);

// The same for packed JPEG bytes (under the caller's HDF5 lock): sample i is bytes [starts[i],
// starts[i+1]) of the 1-D uint8 dataset `dataset`, which must be contiguous (no chunks, filters or
// external storage), allocated, and inside a file of `file_size` without a user block. `starts` has
// been checked already (ascending, from 0 to the dataset's length).
ChunkOffsets find_contiguous_offsets(hid_t file, hid_t dataset, const std::vector<std::uint64_t>& starts,
                                     std::uint64_t file_size);

}  // namespace dptrain::data
