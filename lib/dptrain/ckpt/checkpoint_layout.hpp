#pragma once
// The checkpoint file's layout (format "dptrain-checkpoint", version 1), shared by writer and reader.
//
//   /                  attributes: format, format_version, model, configuration (JSON), dptrain_version,
//                      tuned_choices (JSON; GPU runs only: the cuDNN algorithms, for a bit-exact resume)
//   /params/<name>     one float32 dataset per parameter, named by its stable name ("inception_3a/1x1/weight",
//                      so groups nest at every '/'), shaped like the parameter
//   /buffers/<name>    batch-norm running statistics, the same way
//   /optimizer         attributes: type ("sgd"), momentum, weight_decay, nesterov, decay_all
//   /optimizer/momentum/<parameter name>
//   /progress          a group whose attributes are the progress (see progress_attributes.hpp)
//
// Every tensor dataset carries the attributes `crc32` (CRC-32 of its little-endian float32 bytes, so
// a corrupt file is caught on read) and `index` (its position in the model's build order); every
// section group (/params, /buffers, /optimizer/momentum) carries `count`, so a missing dataset is caught.
#include <hdf5.h>

#include <cstdint>
#include <string>

#include "dptrain/core/tensor.hpp"
#include "dptrain/hdf5/handle.hpp"

namespace dptrain::ckpt {

inline constexpr const char* kFormat = "dptrain-checkpoint";
inline constexpr std::int64_t kFormatVersion = 1;
inline constexpr const char* kParamsGroup = "params";
inline constexpr const char* kBuffersGroup = "buffers";
inline constexpr const char* kOptimizerGroup = "optimizer";
inline constexpr const char* kMomentumGroup = "optimizer/momentum";
inline constexpr const char* kProgressGroup = "progress";

// CRC-32 (zlib's) of a host tensor's bytes.
std::uint32_t tensor_crc32(const Tensor& t);

// File access for checkpoints: HDF5's own file locking is off because the write protocol (a private
// temporary name, then rename) already keeps readers away from a file being written, and flock is
// refused on many Lustre and NFS mounts, where it would make every checkpoint fail.
h5::Handle checkpoint_file_access();

}  // namespace dptrain::ckpt
