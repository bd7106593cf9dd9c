#pragma once
// What our readers accept of a dataset before they read a byte of it. HDF5 converts element types on
// read (float pixels read as uint8 come back as zeros), returns the fill value for chunks that were
// never written, follows external links into other files and reads external or virtual storage from
// wherever it points: none of that is ever what a shard or checkpoint we wrote holds, so each is an
// Error naming the file and the dataset, before anything is allocated for it.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dptrain::h5 {

// The element types we write: uint8 pixels and JPEG bytes, int32 labels (int64 accepted), uint64
// offsets, float32 tensors.
enum class Stored { u8, label, u64, f32 };

// `dataset`'s element type is `type` (class, size and sign), with no conversion to hide a mismatch.
void check_element_type(hid_t dataset, Stored type, const std::string& where);

// `dataset`'s bytes are all in this file and all written: not virtual, no external storage (as
// check_self_contained), and allocated (contiguous), every chunk written (chunked).
void check_storage(hid_t dataset, const std::string& where);

// The bytes of `dims` elements of `element_size` bytes, refused (an Error naming `where`) when the
// product overflows or exceeds `cap`: the size is known to be sane before it is allocated.
std::uint64_t checked_bytes(const std::vector<hsize_t>& dims, std::size_t element_size, std::uint64_t cap,
                            const std::string& where);

// The rule for every HDF5 file we read (shards, checkpoints, weights): the file holds every object
// it names. Every link at every level is a hard link (no soft link, no link into another file, no
// user-defined link) and every dataset keeps its bytes in this file (not virtual, no external
// storage) and can be decoded (every filter of its pipeline available to this process, named when
// not: LZF, Blosc, ...). Checked once when the file is opened, from its structure alone, before any value is
// read: an Error naming the file (`where`) and the first object that breaks the rule.
void check_self_contained(hid_t file, const std::string& where);

}  // namespace dptrain::h5
