#include "support/hdf5_surgery.hpp"

#include <catch2/catch.hpp>
#include <vector>

#include "dptrain/hdf5/handle.hpp"

namespace dptrain::testing {
namespace {
h5::Handle open_rw(const std::string& file) {
  const hid_t id = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(id >= 0);
  return h5::Handle(id, H5Fclose);
}

h5::Handle open_object(hid_t file, const std::string& object_path) {
  const hid_t id = H5Oopen(file, object_path.c_str(), H5P_DEFAULT);
  REQUIRE(id >= 0);
  return h5::Handle(id, H5Oclose);
}
}  // namespace

void replace_attribute_with_array(const std::string& file, const std::string& object_path, const std::string& name,
                                  int count) {
  h5::Handle f = open_rw(file);
  h5::Handle object = open_object(f.id(), object_path);
  REQUIRE(H5Adelete(object.id(), name.c_str()) >= 0);
  const hsize_t dims[1] = {static_cast<hsize_t>(count)};
  h5::Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  h5::Handle attribute(H5Acreate2(object.id(), name.c_str(), H5T_STD_I64LE, space.id(), H5P_DEFAULT, H5P_DEFAULT),
                       H5Aclose);
  REQUIRE(attribute.id() >= 0);
  const std::vector<std::int64_t> values(static_cast<std::size_t>(count), 7);
  REQUIRE(H5Awrite(attribute.id(), H5T_NATIVE_INT64, values.data()) >= 0);
}

void replace_attribute_with(const std::string& file, const std::string& object_path, const std::string& name,
                            hid_t type, const void* value) {
  h5::Handle f = open_rw(file);
  h5::Handle object = open_object(f.id(), object_path);
  REQUIRE(H5Adelete(object.id(), name.c_str()) >= 0);
  h5::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  h5::Handle attribute(H5Acreate2(object.id(), name.c_str(), type, space.id(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  REQUIRE(attribute.id() >= 0);
  REQUIRE(H5Awrite(attribute.id(), type, value) >= 0);
}

void replace_dataset(const std::string& file, const std::string& name,
                     const std::function<void(hid_t file, const std::string& name)>& create) {
  h5::Handle f = open_rw(file);
  REQUIRE(H5Ldelete(f.id(), name.c_str(), H5P_DEFAULT) >= 0);
  create(f.id(), name);
}

void edit_file(const std::string& file, const std::function<void(hid_t file)>& edit) {
  h5::Handle f = open_rw(file);
  edit(f.id());
}

void create_dataset(hid_t file, const std::string& name, hid_t type, const std::vector<hsize_t>& dims,
                    const void* values, const std::vector<hsize_t>& chunk) {
  h5::Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  h5::Handle create(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (!chunk.empty()) REQUIRE(H5Pset_chunk(create.id(), static_cast<int>(chunk.size()), chunk.data()) >= 0);
  h5::Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  REQUIRE(H5Pset_create_intermediate_group(lcpl.id(), 1) >= 0);
  h5::Handle set(H5Dcreate2(file, name.c_str(), type, space.id(), lcpl.id(), create.id(), H5P_DEFAULT), H5Dclose);
  REQUIRE(set.id() >= 0);
  if (values != nullptr) REQUIRE(H5Dwrite(set.id(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0);
}

void create_external_link(hid_t file, const std::string& name, const std::string& other, const std::string& target) {
  REQUIRE(H5Lcreate_external(other.c_str(), target.c_str(), file, name.c_str(), H5P_DEFAULT, H5P_DEFAULT) >= 0);
}

void create_external_storage(hid_t file, const std::string& name, hid_t type, const std::vector<hsize_t>& dims,
                             const std::string& external) {
  h5::Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  h5::Handle create(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  REQUIRE(H5Pset_external(create.id(), external.c_str(), 0, H5F_UNLIMITED) >= 0);
  h5::Handle set(H5Dcreate2(file, name.c_str(), type, space.id(), H5P_DEFAULT, create.id(), H5P_DEFAULT), H5Dclose);
  REQUIRE(set.id() >= 0);
}

namespace {
std::size_t pass_through(unsigned, std::size_t, const unsigned[], std::size_t bytes, std::size_t*, void**) {
  return bytes;
}
}  // namespace

void create_dataset_through_missing_filter(const std::string& file, const std::string& name,
                                           const std::vector<hsize_t>& dims, H5Z_filter_t filter) {
  const H5Z_class2_t filter_class{H5Z_CLASS_T_VERS, filter, 1, 1, "test pass-through", nullptr, nullptr, pass_through};
  REQUIRE(H5Zregister(&filter_class) >= 0);
  {
    h5::Handle f = open_rw(file);
    h5::Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
    h5::Handle create(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    REQUIRE(H5Pset_chunk(create.id(), static_cast<int>(dims.size()), dims.data()) >= 0);
    REQUIRE(H5Pset_filter(create.id(), filter, H5Z_FLAG_MANDATORY, 0, nullptr) >= 0);
    h5::Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    REQUIRE(H5Pset_create_intermediate_group(lcpl.id(), 1) >= 0);
    h5::Handle set(H5Dcreate2(f.id(), name.c_str(), H5T_STD_U8LE, space.id(), lcpl.id(), create.id(), H5P_DEFAULT),
                   H5Dclose);
    REQUIRE(set.id() >= 0);
    hsize_t count = 1;
    for (const hsize_t d : dims) count *= d;
    const std::vector<std::uint8_t> values(count, 7);
    REQUIRE(H5Dwrite(set.id(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
  }
  REQUIRE(H5Zunregister(filter) >= 0);
}

void create_soft_link(hid_t file, const std::string& name, const std::string& target) {
  REQUIRE(H5Lcreate_soft(target.c_str(), file, name.c_str(), H5P_DEFAULT, H5P_DEFAULT) >= 0);
}

void create_virtual_dataset(hid_t file, const std::string& name, const std::vector<hsize_t>& dims,
                            const std::string& other, const std::string& target) {
  h5::Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  h5::Handle create(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  REQUIRE(H5Pset_virtual(create.id(), space.id(), other.c_str(), target.c_str(), space.id()) >= 0);
  h5::Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  REQUIRE(H5Pset_create_intermediate_group(lcpl.id(), 1) >= 0);
  h5::Handle set(H5Dcreate2(file, name.c_str(), H5T_STD_U8LE, space.id(), lcpl.id(), create.id(), H5P_DEFAULT),
                 H5Dclose);
  REQUIRE(set.id() >= 0);
}

}  // namespace dptrain::testing
