#pragma once
// Thin RAII over HDF5 ids (shared by data/ and ckpt/): each handle closes its id with the right H5*close when it goes,
// so an exception thrown half-way through reading a shard leaks nothing.
#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dptrain/core/check_hdf5.hpp"

namespace dptrain::h5 {

class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& other) noexcept : id_(other.id_), closer_(other.closer_) { other.id_ = -1; }
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = other.id_;
      closer_ = other.closer_;
      other.id_ = -1;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t id() const { return id_; }
  // Closes now and checks the result: closing a file is when HDF5 writes its last metadata, so a
  // writer must see that failure instead of losing it in the destructor.
  void close() {
    const hid_t id = id_;
    const Closer closer = closer_;
    id_ = -1;
    if (id >= 0 && closer) DPTRAIN_H5_CHECK(closer(id));
  }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// Silences HDF5's own error printing for this process: failures are reported through DPTRAIN_H5_CHECK.
void quiet_errors();

// A creation property list (H5P_FILE_CREATE, H5P_GROUP_CREATE or H5P_DATASET_CREATE) that stores no
// object times. HDF5 records each object's creation and change times by default, so the same data
// written twice gave different bytes; without them a shard converted again from the same source is
// the same file, checksum included. Every file, group and dataset we create uses one (a checkpoint
// still differs by the time of writing it stores, and by the groups HDF5 makes for nested names).
Handle untimed_creation(hid_t property_class);

Handle create_file(const std::string& path);  // truncates
// The same with file access properties `access` (the format version bounds, say).
Handle create_file(const std::string& path, hid_t access);
// Read-only; a clear Error naming the path when it fails or breaks check_self_contained's rule.
Handle open_file(const std::string& path);
Handle open_dataset(hid_t file, const std::string& name, const std::string& path_for_errors);

// Attributes on an object (the file's root group for shards).
void write_attribute(hid_t object, const std::string& name, std::int64_t value);
void write_attribute(hid_t object, const std::string& name, const std::string& value);
std::int64_t read_int_attribute(hid_t object, const std::string& name, const std::string& path_for_errors);
std::string read_string_attribute(hid_t object, const std::string& name, const std::string& path_for_errors);
// Named apart from write_attribute so that an int argument is never ambiguous between the overloads.
void write_double_attribute(hid_t object, const std::string& name, double value);
double read_double_attribute(hid_t object, const std::string& name, const std::string& path_for_errors);
// One-dimensional int64 and double attributes (an empty list is a null dataspace: a zero-length simple
// dataspace is not accepted for attributes by every HDF5 release).
void write_int_array_attribute(hid_t object, const std::string& name, const std::vector<std::int64_t>& values);
std::vector<std::int64_t> read_int_array_attribute(hid_t object, const std::string& name,
                                                   const std::string& path_for_errors);
void write_double_array_attribute(hid_t object, const std::string& name, const std::vector<double>& values);
std::vector<double> read_double_array_attribute(hid_t object, const std::string& name,
                                                const std::string& path_for_errors);
bool has_attribute(hid_t object, const std::string& name);

// An HDF5 file built in memory and handed back as its bytes: `body` fills a file created with the
// core driver and no backing store (with `access`'s other properties, e.g. the format bounds), which
// is then flushed, copied out (H5Fget_file_image) and closed. No HDF5 call ever touches a disk, so a
// full disk or a file-size limit cannot fail inside HDF5 (whose failed H5Fclose leaves an id that
// crashes at exit): the caller writes the bytes with write(2), which names the cause (ENOSPC, EFBIG).
std::string build_file_image(hid_t access, const std::function<void(hid_t file)>& body);

// The dimensions of a dataset.
std::vector<hsize_t> dataset_dims(hid_t dataset);

}  // namespace dptrain::h5
