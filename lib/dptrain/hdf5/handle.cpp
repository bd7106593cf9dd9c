#include "dptrain/hdf5/handle.hpp"

#include <atomic>
#include <cstring>
#include <filesystem>

#include "dptrain/hdf5/checks.hpp"

// HDF5's own metadata checksum (Jenkins' lookup3), exported by libhdf5 since 1.8.7.
extern "C" std::uint32_t H5_checksum_metadata(const void* data, std::size_t length, std::uint32_t initial);

namespace dptrain::h5 {
namespace {
// H5Fget_file_image of HDF5 1.10 clears the superblock's status flags (the file is open for writing)
// in the image without recomputing the superblock's checksum, so the image would be refused when
// opened ("incorrect metadata checksum"). A version 2 or 3 superblock (at offset 0: we write no user
// block) is signature (8), version, offset size, length size, flags, four addresses, checksum.
void reseal_superblock(std::string& image) {
  static const char signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  DPTRAIN_CHECK(image.size() >= 12 && std::memcmp(image.data(), signature, 8) == 0,
                "an HDF5 file image does not start with a superblock");
  const auto version = static_cast<unsigned char>(image[8]);
  if (version < 2) return;  // versions 0 and 1 carry no checksum
  const std::size_t body = 12 + 4 * static_cast<std::size_t>(static_cast<unsigned char>(image[9]));
  DPTRAIN_CHECK(image.size() >= body + 4, "an HDF5 file image is shorter than its superblock");
  const std::uint32_t checksum = H5_checksum_metadata(image.data(), body, 0);
  std::memcpy(image.data() + body, &checksum, sizeof checksum);  // little-endian, as HDF5 stores it
}
}  // namespace

Handle untimed_creation(hid_t property_class) {
  Handle list(DPTRAIN_H5_CHECK(H5Pcreate(property_class)), H5Pclose);
  DPTRAIN_H5_CHECK(H5Pset_obj_track_times(list.id(), false));
  return list;
}

std::string build_file_image(hid_t access, const std::function<void(hid_t file)>& body) {
  static std::atomic<std::uint64_t> images{0};
  Handle in_memory(DPTRAIN_H5_CHECK(H5Pcopy(access)), H5Pclose);
  DPTRAIN_H5_CHECK(H5Pset_fapl_core(in_memory.id(), std::size_t{1} << 20, false));
  // A name of its own: HDF5 refuses a second open file of the same name.
  const std::string name = "dptrain-in-memory-" + std::to_string(images++);
  const Handle creation = untimed_creation(H5P_FILE_CREATE);  // the root group's times
  Handle file(DPTRAIN_H5_CHECK(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, creation.id(), in_memory.id())), H5Fclose);
  body(file.id());
  DPTRAIN_H5_CHECK(H5Fflush(file.id(), H5F_SCOPE_GLOBAL));
  const ssize_t size = DPTRAIN_H5_CHECK(H5Fget_file_image(file.id(), nullptr, 0));
  std::string bytes(static_cast<std::size_t>(size), '\0');
  DPTRAIN_H5_CHECK(H5Fget_file_image(file.id(), bytes.data(), bytes.size()));
  file.close();
  reseal_superblock(bytes);
  return bytes;
}

void quiet_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

Handle create_file(const std::string& path) { return create_file(path, H5P_DEFAULT); }

Handle create_file(const std::string& path, hid_t access) {
  const Handle creation = untimed_creation(H5P_FILE_CREATE);
  return Handle(DPTRAIN_H5_CHECK(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, creation.id(), access)), H5Fclose);
}

Handle open_file(const std::string& path) {
  DPTRAIN_CHECK(std::filesystem::exists(path), path, ": file not found");
  quiet_errors();
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  H5Eclear2(H5E_DEFAULT);
  DPTRAIN_CHECK(id >= 0, path, ": not a readable HDF5 file (truncated or corrupt?)");
  Handle file(id, H5Fclose);
  check_self_contained(file.id(), path);
  return file;
}

Handle open_dataset(hid_t file, const std::string& name, const std::string& path_for_errors) {
  DPTRAIN_CHECK(H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0, path_for_errors, ": has no dataset '", name, "'");
  return Handle(DPTRAIN_H5_CHECK(H5Dopen2(file, name.c_str(), H5P_DEFAULT)), H5Dclose);
}

void write_attribute(hid_t object, const std::string& name, std::int64_t value) {
  Handle space(DPTRAIN_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  Handle attribute(
      DPTRAIN_H5_CHECK(H5Acreate2(object, name.c_str(), H5T_NATIVE_INT64, space.id(), H5P_DEFAULT, H5P_DEFAULT)),
      H5Aclose);
  DPTRAIN_H5_CHECK(H5Awrite(attribute.id(), H5T_NATIVE_INT64, &value));
}

void write_attribute(hid_t object, const std::string& name, const std::string& value) {
  Handle type(DPTRAIN_H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
  DPTRAIN_H5_CHECK(H5Tset_size(type.id(), value.empty() ? 1 : value.size()));
  Handle space(DPTRAIN_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  Handle attribute(DPTRAIN_H5_CHECK(H5Acreate2(object, name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT)),
                   H5Aclose);
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  DPTRAIN_H5_CHECK(H5Awrite(attribute.id(), type.id(), padded.data()));
}

void write_double_attribute(hid_t object, const std::string& name, double value) {
  Handle space(DPTRAIN_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  Handle attribute(
      DPTRAIN_H5_CHECK(H5Acreate2(object, name.c_str(), H5T_IEEE_F64LE, space.id(), H5P_DEFAULT, H5P_DEFAULT)),
      H5Aclose);
  DPTRAIN_H5_CHECK(H5Awrite(attribute.id(), H5T_NATIVE_DOUBLE, &value));
}

namespace {
// The most bytes a string attribute and the most elements an array attribute of ours may have: far
// above what we write (a configuration is a few KB, a schedule a few numbers), and a bound on what a
// damaged or crafted file can make us allocate.
constexpr std::size_t kMaxStringBytes = 16u << 20;
constexpr hssize_t kMaxArrayElements = 1 << 20;

Handle open_attribute(hid_t object, const std::string& name, const std::string& path_for_errors) {
  DPTRAIN_CHECK(H5Aexists(object, name.c_str()) > 0, path_for_errors, ": attribute '", name, "' is missing");
  return Handle(DPTRAIN_H5_CHECK(H5Aopen(object, name.c_str(), H5P_DEFAULT)), H5Aclose);
}

// A single value: a scalar dataspace (what we write), or a simple one of exactly one element. H5Aread
// writes every element, so an array read into one variable would overrun it.
void check_single_value(hid_t attribute, const std::string& name, const std::string& path_for_errors) {
  Handle space(DPTRAIN_H5_CHECK(H5Aget_space(attribute)), H5Sclose);
  const H5S_class_t kind = DPTRAIN_H5_CHECK(H5Sget_simple_extent_type(space.id()));
  const hssize_t count = kind == H5S_NULL ? 0 : DPTRAIN_H5_CHECK(H5Sget_simple_extent_npoints(space.id()));
  DPTRAIN_CHECK(kind == H5S_SCALAR || (kind == H5S_SIMPLE && count == 1), path_for_errors, ": attribute '", name,
                "' holds ", count, " values, not one");
}
}  // namespace

std::int64_t read_int_attribute(hid_t object, const std::string& name, const std::string& path_for_errors) {
  Handle attribute = open_attribute(object, name, path_for_errors);
  Handle type(DPTRAIN_H5_CHECK(H5Aget_type(attribute.id())), H5Tclose);
  DPTRAIN_CHECK(H5Tget_class(type.id()) == H5T_INTEGER, path_for_errors, ": attribute '", name, "' is not an integer");
  // We write int64; an unsigned 64-bit value could exceed it, and HDF5 would clip it silently.
  const std::size_t size = H5Tget_size(type.id());
  DPTRAIN_CHECK(size <= 8 && !(size == 8 && H5Tget_sign(type.id()) == H5T_SGN_NONE), path_for_errors, ": attribute '",
                name, "' is not a signed integer of at most 64 bits");
  check_single_value(attribute.id(), name, path_for_errors);
  std::int64_t value = 0;
  DPTRAIN_H5_CHECK(H5Aread(attribute.id(), H5T_NATIVE_INT64, &value));
  return value;
}

double read_double_attribute(hid_t object, const std::string& name, const std::string& path_for_errors) {
  Handle attribute = open_attribute(object, name, path_for_errors);
  Handle type(DPTRAIN_H5_CHECK(H5Aget_type(attribute.id())), H5Tclose);
  DPTRAIN_CHECK(H5Tget_class(type.id()) == H5T_FLOAT && H5Tget_size(type.id()) <= 8, path_for_errors, ": attribute '",
                name, "' is not a number");
  check_single_value(attribute.id(), name, path_for_errors);
  double value = 0;
  DPTRAIN_H5_CHECK(H5Aread(attribute.id(), H5T_NATIVE_DOUBLE, &value));
  return value;
}

std::string read_string_attribute(hid_t object, const std::string& name, const std::string& path_for_errors) {
  Handle attribute = open_attribute(object, name, path_for_errors);
  Handle type(DPTRAIN_H5_CHECK(H5Aget_type(attribute.id())), H5Tclose);
  DPTRAIN_CHECK(H5Tget_class(type.id()) == H5T_STRING && !H5Tis_variable_str(type.id()), path_for_errors,
                ": attribute '", name, "' is not a fixed-length string");
  check_single_value(attribute.id(), name, path_for_errors);
  const std::size_t size = H5Tget_size(type.id());
  DPTRAIN_CHECK(size <= kMaxStringBytes, path_for_errors, ": attribute '", name, "' is a string of ", size,
                " bytes, more than the ", kMaxStringBytes, " it may have");
  std::string value(size, '\0');
  DPTRAIN_H5_CHECK(H5Aread(attribute.id(), type.id(), value.data()));
  if (auto end = value.find('\0'); end != std::string::npos) value.resize(end);
  return value;
}

namespace {
template <class T>
void write_array_attribute(hid_t object, const std::string& name, const std::vector<T>& values, hid_t file_type,
                           hid_t memory_type) {
  const hsize_t dims[1] = {values.size()};
  Handle space(DPTRAIN_H5_CHECK(values.empty() ? H5Screate(H5S_NULL) : H5Screate_simple(1, dims, nullptr)), H5Sclose);
  Handle attribute(DPTRAIN_H5_CHECK(H5Acreate2(object, name.c_str(), file_type, space.id(), H5P_DEFAULT, H5P_DEFAULT)),
                   H5Aclose);
  if (!values.empty()) DPTRAIN_H5_CHECK(H5Awrite(attribute.id(), memory_type, values.data()));
}

template <class T>
std::vector<T> read_array_attribute(hid_t object, const std::string& name, const std::string& path_for_errors,
                                    H5T_class_t type_class, hid_t memory_type, const char* what) {
  Handle attribute = open_attribute(object, name, path_for_errors);
  Handle type(DPTRAIN_H5_CHECK(H5Aget_type(attribute.id())), H5Tclose);
  DPTRAIN_CHECK(H5Tget_class(type.id()) == type_class && H5Tget_size(type.id()) <= 8, path_for_errors, ": attribute '",
                name, "' is not ", what);
  Handle space(DPTRAIN_H5_CHECK(H5Aget_space(attribute.id())), H5Sclose);
  const H5S_class_t kind = DPTRAIN_H5_CHECK(H5Sget_simple_extent_type(space.id()));
  if (kind == H5S_NULL) return {};  // how we write an empty list
  DPTRAIN_CHECK(kind == H5S_SIMPLE && DPTRAIN_H5_CHECK(H5Sget_simple_extent_ndims(space.id())) == 1, path_for_errors,
                ": attribute '", name, "' is not a one-dimensional list");
  const hssize_t count = DPTRAIN_H5_CHECK(H5Sget_simple_extent_npoints(space.id()));
  DPTRAIN_CHECK(count <= kMaxArrayElements, path_for_errors, ": attribute '", name, "' holds ", count,
                " values, more than the ", kMaxArrayElements, " it may");
  std::vector<T> values(static_cast<std::size_t>(count));
  if (count > 0) DPTRAIN_H5_CHECK(H5Aread(attribute.id(), memory_type, values.data()));
  return values;
}
}  // namespace

void write_int_array_attribute(hid_t object, const std::string& name, const std::vector<std::int64_t>& values) {
  write_array_attribute(object, name, values, H5T_STD_I64LE, H5T_NATIVE_INT64);
}

std::vector<std::int64_t> read_int_array_attribute(hid_t object, const std::string& name,
                                                   const std::string& path_for_errors) {
  return read_array_attribute<std::int64_t>(object, name, path_for_errors, H5T_INTEGER, H5T_NATIVE_INT64,
                                            "an integer array");
}

void write_double_array_attribute(hid_t object, const std::string& name, const std::vector<double>& values) {
  write_array_attribute(object, name, values, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
}

std::vector<double> read_double_array_attribute(hid_t object, const std::string& name,
                                                const std::string& path_for_errors) {
  return read_array_attribute<double>(object, name, path_for_errors, H5T_FLOAT, H5T_NATIVE_DOUBLE, "a number array");
}

bool has_attribute(hid_t object, const std::string& name) {
  return DPTRAIN_H5_CHECK(H5Aexists(object, name.c_str())) > 0;
}

std::vector<hsize_t> dataset_dims(hid_t dataset) {
  Handle space(DPTRAIN_H5_CHECK(H5Dget_space(dataset)), H5Sclose);
  const int rank = DPTRAIN_H5_CHECK(H5Sget_simple_extent_ndims(space.id()));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  DPTRAIN_H5_CHECK(H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr));
  return dims;
}

}  // namespace dptrain::h5
