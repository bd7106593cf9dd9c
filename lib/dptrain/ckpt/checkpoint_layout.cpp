#include "dptrain/ckpt/checkpoint_layout.hpp"

#include <zlib.h>

namespace dptrain::ckpt {

std::uint32_t tensor_crc32(const Tensor& t) {
  // crc32_z takes a size_t length: parameters larger than 4 GiB need no chunking.
  return static_cast<std::uint32_t>(crc32_z(crc32_z(0L, Z_NULL, 0), static_cast<const Bytef*>(t.raw()), t.bytes()));
}

h5::Handle checkpoint_file_access() {
  h5::Handle access(DPTRAIN_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)), H5Pclose);
  // The 1.8 format, exactly: attributes larger than 64 KiB (a long configuration) go to dense storage
  // instead of failing, and every HDF5 since 1.8 (h5py, h5dump, an older cluster's dptrain) reads it.
  DPTRAIN_H5_CHECK(H5Pset_libver_bounds(access.id(), H5F_LIBVER_V18, H5F_LIBVER_V18));
#if H5_VERSION_GE(1, 10, 7)
  DPTRAIN_H5_CHECK(H5Pset_file_locking(access.id(), false, true));
#endif
  return access;
}

}  // namespace dptrain::ckpt
