#include "dptrain/hdf5/handle.hpp"

#include <filesystem>

namespace dptrain::h5 {

void quiet_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

Handle create_file(const std::string& path) {
  return Handle(DPTRAIN_H5_CHECK(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)), H5Fclose);
}

Handle open_file(const std::string& path) {
  DPTRAIN_CHECK(std::filesystem::exists(path), path, ": file not found");
  quiet_errors();
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  H5Eclear2(H5E_DEFAULT);
  DPTRAIN_CHECK(id >= 0, path, ": not a readable HDF5 file (truncated or corrupt?)");
  return Handle(id, H5Fclose);
}

Handle open_dataset(hid_t file, const std::string& name, const std::string& path_for_errors) {
  DPTRAIN_CHECK(H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0, path_for_errors, ": has no dataset '", name, "'");
  return Handle(DPTRAIN_H5_CHECK(H5Dopen2(file, name.c_str(), H5P_DEFAULT)), H5Dclose);
}

void write_attribute(hid_t object, const std::string& name, std::int64_t value) {
  Handle space(DPTRAIN_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  Handle attribute(DPTRAIN_H5_CHECK(H5Acreate2(object, name.c_str(), H5T_NATIVE_INT64, space.id(), H5P_DEFAULT, H5P_DEFAULT)),
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
  Handle attribute(DPTRAIN_H5_CHECK(H5Acreate2(object, name.c_str(), H5T_IEEE_F64LE, space.id(), H5P_DEFAULT, H5P_DEFAULT)),
                   H5Aclose);
  DPTRAIN_H5_CHECK(H5Awrite(attribute.id(), H5T_NATIVE_DOUBLE, &value));
}

namespace {
Handle open_attribute(hid_t object, const std::string& name, const std::string& path_for_errors) {
  DPTRAIN_CHECK(H5Aexists(object, name.c_str()) > 0, path_for_errors, ": attribute '", name, "' is missing");
  return Handle(DPTRAIN_H5_CHECK(H5Aopen(object, name.c_str(), H5P_DEFAULT)), H5Aclose);
}
}  // namespace

std::int64_t read_int_attribute(hid_t object, const std::string& name, const std::string& path_for_errors) {
  Handle attribute = open_attribute(object, name, path_for_errors);
  Handle type(DPTRAIN_H5_CHECK(H5Aget_type(attribute.id())), H5Tclose);
  DPTRAIN_CHECK(H5Tget_class(type.id()) == H5T_INTEGER, path_for_errors, ": attribute '", name,
                "' is not an integer");
  std::int64_t value = 0;
  DPTRAIN_H5_CHECK(H5Aread(attribute.id(), H5T_NATIVE_INT64, &value));
  return value;
}

double read_double_attribute(hid_t object, const std::string& name, const std::string& path_for_errors) {
  Handle attribute = open_attribute(object, name, path_for_errors);
  Handle type(DPTRAIN_H5_CHECK(H5Aget_type(attribute.id())), H5Tclose);
  DPTRAIN_CHECK(H5Tget_class(type.id()) == H5T_FLOAT, path_for_errors, ": attribute '", name, "' is not a number");
  double value = 0;
  DPTRAIN_H5_CHECK(H5Aread(attribute.id(), H5T_NATIVE_DOUBLE, &value));
  return value;
}

std::string read_string_attribute(hid_t object, const std::string& name, const std::string& path_for_errors) {
  Handle attribute = open_attribute(object, name, path_for_errors);
  Handle type(DPTRAIN_H5_CHECK(H5Aget_type(attribute.id())), H5Tclose);
  DPTRAIN_CHECK(H5Tget_class(type.id()) == H5T_STRING && !H5Tis_variable_str(type.id()), path_for_errors,
                ": attribute '", name, "' is not a fixed-length string");
  std::string value(H5Tget_size(type.id()), '\0');
  DPTRAIN_H5_CHECK(H5Aread(attribute.id(), type.id(), value.data()));
  if (auto end = value.find('\0'); end != std::string::npos) value.resize(end);
  return value;
}

std::vector<hsize_t> dataset_dims(hid_t dataset) {
  Handle space(DPTRAIN_H5_CHECK(H5Dget_space(dataset)), H5Sclose);
  const int rank = DPTRAIN_H5_CHECK(H5Sget_simple_extent_ndims(space.id()));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  DPTRAIN_H5_CHECK(H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr));
  return dims;
}

}  // namespace dptrain::h5
