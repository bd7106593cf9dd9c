#include "dptrain/data/chunk_offsets.hpp"

#include "dptrain/core/check_hdf5.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/hdf5/handle.hpp"

namespace dptrain::data {
namespace {
ChunkOffsets fallback(std::string reason) {
  ChunkOffsets result;
  result.fallback_reason = std::move(reason);
  return result;
}

constexpr std::uint64_t kUnset = ~std::uint64_t{0};

struct ChunkScan {
  ChunkOffsets* result;
  std::uint64_t sample_bytes, file_size;
  std::string reason;  // set: not readable directly
};

// One chunk: its first coordinate is its sample. Checked here, once: a corrupt index must not make
// pread read past the end of the file.
int on_chunk(const hsize_t* offset, unsigned filter_mask, haddr_t address, hsize_t size, void* data) {
  auto& scan = *static_cast<ChunkScan*>(data);
  const hsize_t i = offset[0];
  std::vector<std::uint64_t>& offsets = scan.result->offsets;
  if (address == HADDR_UNDEF) {
    scan.reason = detail::concat("sample ", i, "'s chunk is not allocated");
  } else if (filter_mask != 0 || size != scan.sample_bytes) {
    scan.reason = detail::concat("sample ", i, "'s chunk is not raw");
  } else if (i >= offsets.size() || offsets[i] != kUnset) {
    scan.reason = detail::concat("the chunk index lists sample ", i, " twice or outside the dataset");
  } else if (address > scan.file_size || size > scan.file_size - address) {
    scan.reason = detail::concat("sample ", i, "'s chunk at byte ", address, " (", size,
                                 " bytes) lies beyond the end of the file (", scan.file_size,
                                 " bytes): the shard is truncated or corrupt");
  } else {
    offsets[i] = address;
    return 0;
  }
  return 1;  // stop: H5_ITER_STOP
}

// Why `dataset` in `file` cannot be read with pread at HDF5's addresses ("" when it can, as far as
// the element type and the file go): the elements must be bytes, and addresses are relative to the
// base address, which a user block moves.
std::string byte_dataset_problem(hid_t file, hid_t dataset, const char* what) {
  {
    h5::Handle type(DPTRAIN_H5_CHECK(H5Dget_type(dataset)), H5Tclose);
    if (DPTRAIN_H5_CHECK(H5Tget_class(type.id())) != H5T_INTEGER || H5Tget_size(type.id()) != 1) {
      return detail::concat("the ", what, " are not stored as bytes");
    }
  }
  h5::Handle create(DPTRAIN_H5_CHECK(H5Fget_create_plist(file)), H5Pclose);
  hsize_t user_block = 0;
  DPTRAIN_H5_CHECK(H5Pget_userblock(create.id(), &user_block));
  if (user_block != 0) return "the file has a user block";
  return {};
}

// Where a contiguous dataset's `total` bytes start in the file (through `base`), or why it cannot be
// read directly: `what` names its contents in the reason.
std::string contiguous_problem(hid_t create, hid_t dataset, std::uint64_t total, std::uint64_t file_size,
                               const char* what, haddr_t& base) {
  if (DPTRAIN_H5_CHECK(H5Pget_external_count(create)) != 0) {
    return detail::concat("the ", what, " are stored in external files");
  }
  if (total == 0) return detail::concat("the shard holds no ", what);
  base = H5Dget_offset(dataset);
  if (base == HADDR_UNDEF) return detail::concat("the ", what, " are not allocated");
  if (base > file_size || total > file_size - base) {
    return detail::concat("the ", what, " at byte ", base, " (", total, " bytes) lie beyond the end of the file (",
                          file_size, " bytes): the shard is truncated or corrupt");
  }
  return {};
}

ChunkOffsets direct(std::vector<std::uint64_t> offsets, const char* path) {
  ChunkOffsets result;
  result.offsets = std::move(offsets);
  result.direct_path = path;
  return result;
}

ChunkOffsets find_chunk_offsets(hid_t dataset, hid_t create, std::int64_t samples, std::uint64_t sample_bytes,
                                std::uint64_t file_size);
}  // namespace

ChunkOffsets find_jpeg_offsets(hid_t file, hid_t dataset, const std::vector<std::uint64_t>& starts,
                               std::uint64_t file_size) {
  if (std::string problem = byte_dataset_problem(file, dataset, "JPEG bytes"); !problem.empty()) {
    return fallback(std::move(problem));
  }
  h5::Handle create(DPTRAIN_H5_CHECK(H5Dget_create_plist(dataset)), H5Pclose);
  if (DPTRAIN_H5_CHECK(H5Pget_layout(create.id())) != H5D_CONTIGUOUS) {
    return fallback("the JPEG bytes are chunked (or compact)");
  }
  const std::uint64_t total = starts.empty() ? 0 : starts.back();
  haddr_t base = HADDR_UNDEF;
  if (std::string problem = contiguous_problem(create.id(), dataset, total, file_size, "JPEG bytes", base);
      !problem.empty()) {
    return fallback(std::move(problem));
  }
  std::vector<std::uint64_t> offsets;
  offsets.reserve(starts.size() - 1);
  for (std::size_t i = 0; i + 1 < starts.size(); ++i) offsets.push_back(base + starts[i]);
  return direct(std::move(offsets), kDirectJpegReadPath);
}

ChunkOffsets find_raw_offsets(hid_t file, hid_t dataset, std::int64_t samples, std::uint64_t sample_bytes,
                              std::uint64_t file_size) {
  if (std::string problem = byte_dataset_problem(file, dataset, "pixels"); !problem.empty()) {
    return fallback(std::move(problem));
  }
  const std::vector<hsize_t> dims = h5::dataset_dims(dataset);
  if (dims.size() != 4) return fallback("the images are not N x H x W x C");
  if (static_cast<std::int64_t>(dims[0]) != samples || dims[1] * dims[2] * dims[3] != sample_bytes) {
    return fallback("the dataset's shape is not the shard's");
  }
  h5::Handle create(DPTRAIN_H5_CHECK(H5Dget_create_plist(dataset)), H5Pclose);
  const H5D_layout_t layout = DPTRAIN_H5_CHECK(H5Pget_layout(create.id()));
  if (layout == H5D_CHUNKED) return find_chunk_offsets(dataset, create.id(), samples, sample_bytes, file_size);
  if (layout != H5D_CONTIGUOUS) return fallback("the images are stored compact (in the object header)");
  haddr_t base = HADDR_UNDEF;
  // More bytes than a file can hold is a shape no shard has (and would wrap the product).
  if (samples < 0 || (sample_bytes > 0 && static_cast<std::uint64_t>(samples) > file_size / sample_bytes)) {
    return fallback("the images would be larger than the file: the shard is truncated or corrupt");
  }
  const std::uint64_t total = static_cast<std::uint64_t>(samples) * sample_bytes;
  if (std::string problem = contiguous_problem(create.id(), dataset, total, file_size, "images", base);
      !problem.empty()) {
    return fallback(std::move(problem));
  }
  std::vector<std::uint64_t> offsets(static_cast<std::size_t>(samples));
  for (std::size_t i = 0; i < offsets.size(); ++i) offsets[i] = base + i * sample_bytes;
  return direct(std::move(offsets), kDirectReadPath);
}

namespace {
// A chunked `images` dataset (already checked: uint8, N x H x W x C of the shard's shape).
ChunkOffsets find_chunk_offsets(hid_t dataset, hid_t create, std::int64_t samples, std::uint64_t sample_bytes,
                                std::uint64_t file_size) {
  if (DPTRAIN_H5_CHECK(H5Pget_nfilters(create)) != 0) return fallback("the chunks are filtered (compressed)");
  const std::vector<hsize_t> dims = h5::dataset_dims(dataset);
  hsize_t chunk[4] = {0, 0, 0, 0};
  if (DPTRAIN_H5_CHECK(H5Pget_chunk(create, 4, chunk)) != 4 || chunk[0] != 1 || chunk[1] != dims[1] ||
      chunk[2] != dims[2] || chunk[3] != dims[3]) {
    return fallback("a chunk is not exactly one image");
  }
#if !H5_VERSION_GE(1, 14, 3)
  if (samples > kMaxChunkLookups) {
    return fallback(detail::concat("finding the chunks of ", samples, " images one by one takes time quadratic in ",
                                   "them with HDF5 ", H5_VERS_MAJOR, ".", H5_VERS_MINOR, ".", H5_VERS_RELEASE,
                                   " (convert the dataset again for the contiguous layout)"));
  }
#endif
  ChunkOffsets result;
  result.offsets.assign(static_cast<std::size_t>(samples), kUnset);
  ChunkScan scan{&result, sample_bytes, file_size, {}};
#if H5_VERSION_GE(1, 14, 3)
  // One pass over the chunk index (from 1.14.3 the callback has this signature and gives offsets in
  // elements; with one image per chunk, offset[0] is the sample).
  DPTRAIN_H5_CHECK(H5Dchunk_iter(dataset, H5P_DEFAULT, on_chunk, &scan));
#else
  // Older HDF5 (Debian's 1.10) has no usable chunk iteration, and each look-up walks the index, so a
  // shard of N images costs O(N^2) here, once per shard and run, under the HDF5 lock (measured:
  // about 80 us a look-up at 15,000 images; ImageNet's 1,250-image shards take milliseconds).
  for (std::int64_t i = 0; i < samples && scan.reason.empty(); ++i) {
    const hsize_t coordinate[4] = {static_cast<hsize_t>(i), 0, 0, 0};
    unsigned filter_mask = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t size = 0;
    DPTRAIN_H5_CHECK(H5Dget_chunk_info_by_coord(dataset, coordinate, &filter_mask, &address, &size));
    on_chunk(coordinate, filter_mask, address, size, &scan);
  }
#endif
  if (!scan.reason.empty()) return fallback(scan.reason);
  for (std::size_t i = 0; i < result.offsets.size(); ++i) {
    if (result.offsets[i] == kUnset) return fallback(detail::concat("sample ", i, "'s chunk is not allocated"));
  }
  result.direct_path = kDirectChunkReadPath;
  return result;
}
}  // namespace

}  // namespace dptrain::data
