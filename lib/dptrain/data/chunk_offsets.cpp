#include "dptrain/data/chunk_offsets.hpp"

#include "dptrain/core/check_hdf5.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/data/hdf5_handle.hpp"

namespace dptrain::data {
namespace {
ChunkOffsets fallback(std::string reason) {
  ChunkOffsets result;
  result.fallback_reason = std::move(reason);
  return result;
}
}  // namespace

ChunkOffsets find_chunk_offsets(hid_t file, hid_t dataset, std::int64_t samples, std::uint64_t sample_bytes,
                                std::uint64_t file_size) {
  {
    h5::Handle type(H5_CHECK(H5Dget_type(dataset)), H5Tclose);
    if (H5_CHECK(H5Tget_class(type.id())) != H5T_INTEGER || H5Tget_size(type.id()) != 1) {
      return fallback("the pixels are not stored as bytes");
    }
  }
  {
    // Chunk addresses are relative to the base address, which a user block moves.
    h5::Handle create(H5_CHECK(H5Fget_create_plist(file)), H5Pclose);
    hsize_t user_block = 0;
    H5_CHECK(H5Pget_userblock(create.id(), &user_block));
    if (user_block != 0) return fallback("the file has a user block");
  }
  h5::Handle create(H5_CHECK(H5Dget_create_plist(dataset)), H5Pclose);
  if (H5_CHECK(H5Pget_layout(create.id())) != H5D_CHUNKED) return fallback("the images are not chunked");
  if (H5_CHECK(H5Pget_nfilters(create.id())) != 0) return fallback("the chunks are filtered (compressed)");
  const std::vector<hsize_t> dims = h5::dataset_dims(dataset);
  if (dims.size() != 4) return fallback("the images are not N x H x W x C");
  hsize_t chunk[4] = {0, 0, 0, 0};
  if (H5_CHECK(H5Pget_chunk(create.id(), 4, chunk)) != 4 || chunk[0] != 1 || chunk[1] != dims[1] ||
      chunk[2] != dims[2] || chunk[3] != dims[3]) {
    return fallback("a chunk is not exactly one image");
  }
  if (static_cast<std::int64_t>(dims[0]) != samples || dims[1] * dims[2] * dims[3] != sample_bytes) {
    return fallback("the dataset's shape is not the shard's");
  }
  ChunkOffsets result;
  result.offsets.resize(static_cast<std::size_t>(samples));
  for (std::int64_t i = 0; i < samples; ++i) {
    const hsize_t coordinate[4] = {static_cast<hsize_t>(i), 0, 0, 0};
    unsigned filter_mask = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t size = 0;
    H5_CHECK(H5Dget_chunk_info_by_coord(dataset, coordinate, &filter_mask, &address, &size));
    if (address == HADDR_UNDEF) return fallback(detail::concat("sample ", i, "'s chunk is not allocated"));
    if (filter_mask != 0 || size != sample_bytes) return fallback(detail::concat("sample ", i, "'s chunk is not raw"));
    // Validated here, once: a corrupt index must not make pread read past the end or allocate.
    DPTRAIN_CHECK(address <= file_size && size <= file_size - address, "sample ", i, "'s chunk at byte ", address,
                  " (", size, " bytes) lies beyond the end of the file (", file_size, " bytes): the shard is truncated "
                  "or corrupt; convert it again");
    result.offsets[static_cast<std::size_t>(i)] = address;
  }
  return result;
}

}  // namespace dptrain::data
