#include "dptrain/hdf5/checks.hpp"

#include <limits>

#include "dptrain/core/check_hdf5.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/hdf5/handle.hpp"

namespace dptrain::h5 {
namespace {
const char* name_of(Stored type) {
  switch (type) {
    case Stored::u8: return "unsigned 8-bit integers";
    case Stored::label: return "signed 32- or 64-bit integers";
    case Stored::u64: return "unsigned 64-bit integers";
    case Stored::f32: return "32-bit floats";
  }
  return "?";
}
}  // namespace

void check_element_type(hid_t dataset, Stored type, const std::string& where) {
  Handle t(DPTRAIN_H5_CHECK(H5Dget_type(dataset)), H5Tclose);
  const H5T_class_t cls = DPTRAIN_H5_CHECK(H5Tget_class(t.id()));
  const std::size_t size = H5Tget_size(t.id());
  bool ok = false;
  if (type == Stored::f32) {
    ok = cls == H5T_FLOAT && size == 4;
  } else if (cls == H5T_INTEGER) {
    const H5T_sign_t sign = H5Tget_sign(t.id());
    switch (type) {
      case Stored::u8: ok = size == 1 && sign == H5T_SGN_NONE; break;
      case Stored::label: ok = (size == 4 || size == 8) && sign == H5T_SGN_2; break;
      case Stored::u64: ok = size == 8 && sign == H5T_SGN_NONE; break;
      case Stored::f32: break;
    }
  }
  DPTRAIN_CHECK(ok, where, " is not stored as ", name_of(type), " (class ", static_cast<int>(cls), ", ", size,
                " bytes an element)");
}

namespace {
// Registered HDF5 filters a file from elsewhere may use (the HDF Group's list), by number.
std::string filter_name(H5Z_filter_t id, const char* stored) {
  switch (id) {
    case 307: return "bzip2";
    case 32000: return "LZF";
    case 32001: return "Blosc";
    case 32004: return "LZ4";
    case 32008: return "bitshuffle";
    case 32013: return "ZFP";
    case 32015: return "Zstandard";
    case 32017: return "SZ";
    default: return stored[0] != '\0' ? stored : "unnamed";
  }
}

// Every filter of the dataset's pipeline can be decoded by this process's HDF5 (built in, or a plugin
// found on HDF5_PLUGIN_PATH): otherwise HDF5 fails the first read with a message about plugin
// directories that never names the filter.
void check_filters(hid_t create, const std::string& where) {
  const int filters = DPTRAIN_H5_CHECK(H5Pget_nfilters(create));
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t values = 0;  // none wanted: no array to write into
    char name[128] = "";
    const H5Z_filter_t id =
        H5Pget_filter2(create, static_cast<unsigned>(i), &flags, &values, nullptr, sizeof name, name, &config);
    DPTRAIN_CHECK(id >= 0, where, ": its filter pipeline cannot be read (damaged?)");
    bool decodes = H5Zfilter_avail(id) > 0;
    unsigned info = 0;
    if (decodes) decodes = H5Zget_filter_info(id, &info) >= 0 && (info & H5Z_FILTER_CONFIG_DECODE_ENABLED) != 0;
    H5Eclear2(H5E_DEFAULT);
    DPTRAIN_CHECK(decodes, where, " is stored through HDF5 filter ", id, " (", filter_name(id, name),
                  "), which this HDF5 library cannot decode: install that filter's plugin and set HDF5_PLUGIN_PATH, "
                  "or write the file again without it (dptrain's converter writes no such filter)");
  }
}

// The dataset's layout, after refusing one whose bytes live in other files or pass through a filter
// this process cannot decode.
H5D_layout_t check_stored_here(hid_t create, const std::string& where) {
  const H5D_layout_t layout = DPTRAIN_H5_CHECK(H5Pget_layout(create));
  DPTRAIN_CHECK(layout != H5D_VIRTUAL, where, " is a virtual dataset (its data lives in other files): refused");
  DPTRAIN_CHECK(DPTRAIN_H5_CHECK(H5Pget_external_count(create)) == 0, where,
                " keeps its data in external files: refused");
  check_filters(create, where);
  return layout;
}
}  // namespace

void check_storage(hid_t dataset, const std::string& where) {
  Handle create(DPTRAIN_H5_CHECK(H5Dget_create_plist(dataset)), H5Pclose);
  const H5D_layout_t layout = check_stored_here(create.id(), where);
  Handle space(DPTRAIN_H5_CHECK(H5Dget_space(dataset)), H5Sclose);
  const hssize_t elements = DPTRAIN_H5_CHECK(H5Sget_simple_extent_npoints(space.id()));
  if (elements == 0) return;
  if (layout == H5D_CONTIGUOUS) {
    H5D_space_status_t status = H5D_SPACE_STATUS_ERROR;
    DPTRAIN_H5_CHECK(H5Dget_space_status(dataset, &status));
    DPTRAIN_CHECK(status == H5D_SPACE_STATUS_ALLOCATED, where, " was never written (no storage allocated)");
  } else if (layout == H5D_CHUNKED) {
    const int rank = DPTRAIN_H5_CHECK(H5Sget_simple_extent_ndims(space.id()));
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank)), chunk(static_cast<std::size_t>(rank));
    DPTRAIN_H5_CHECK(H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr));
    DPTRAIN_CHECK(DPTRAIN_H5_CHECK(H5Pget_chunk(create.id(), rank, chunk.data())) == rank, where,
                  ": its chunk shape does not match its rank");
    hsize_t expected = 1;
    for (int i = 0; i < rank; ++i) {
      DPTRAIN_CHECK(chunk[static_cast<std::size_t>(i)] > 0, where, ": a chunk dimension is 0");
      expected *= (dims[static_cast<std::size_t>(i)] + chunk[static_cast<std::size_t>(i)] - 1) /
                  chunk[static_cast<std::size_t>(i)];
    }
    hsize_t written = 0;
    DPTRAIN_H5_CHECK(H5Dget_num_chunks(dataset, space.id(), &written));
    DPTRAIN_CHECK(written == expected, where, " has ", written, " of its ", expected,
                  " chunks written: the others would read as zeros");
  }
}

std::uint64_t checked_bytes(const std::vector<hsize_t>& dims, std::size_t element_size, std::uint64_t cap,
                            const std::string& where) {
  std::uint64_t bytes = element_size;
  for (const hsize_t d : dims) {
    DPTRAIN_CHECK(d == 0 || bytes <= std::numeric_limits<std::uint64_t>::max() / d, where,
                  " has a shape too large to address");
    bytes *= d;
  }
  DPTRAIN_CHECK(bytes <= cap, where, " would take ", bytes, " bytes, more than the ", cap, " it may");
  return bytes;
}

namespace {
// What a visit of the file's links found: every hard link's path, and the first other link. The
// callback only collects (an exception must not cross HDF5's C frames) and stops at the first
// refused link.
struct Structure {
  std::vector<std::string> hard;
  std::string refused, what;
};

std::string describe_link(hid_t file, const char* name, const H5L_info_t& info) {
  if (info.type != H5L_TYPE_SOFT && info.type != H5L_TYPE_EXTERNAL) return "a user-defined link";
  std::string value(info.u.val_size + 1, '\0');
  if (H5Lget_val(file, name, value.data(), value.size(), H5P_DEFAULT) < 0) {
    return info.type == H5L_TYPE_SOFT ? "a soft link" : "a link into another file";
  }
  if (info.type == H5L_TYPE_SOFT) return "a soft link to '" + std::string(value.c_str()) + "'";
  const char* other = nullptr;
  const char* object = nullptr;
  if (H5Lunpack_elink_val(value.data(), value.size(), nullptr, &other, &object) < 0 || !other || !object) {
    return "a link into another file";
  }
  return "a link into another file (" + std::string(other) + ":" + object + ")";
}

herr_t visit_link(hid_t file, const char* name, const H5L_info_t* info, void* out) {
  auto& found = *static_cast<Structure*>(out);
  if (info->type == H5L_TYPE_HARD) {
    found.hard.emplace_back(name);
    return 0;
  }
  found.refused = name;
  found.what = describe_link(file, name, *info);
  return 1;  // one is enough: stop the visit
}
}  // namespace

void check_self_contained(hid_t file, const std::string& where) {
  // H5Lvisit reports soft and external links without following them, and enters each group once.
  Structure found;
  DPTRAIN_H5_CHECK(H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, visit_link, &found));
  DPTRAIN_CHECK(found.refused.empty(), where, ": '/", found.refused, "' is ", found.what,
                "; dptrain reads only objects a file holds itself: refused");
  for (const std::string& name : found.hard) {
    Handle object(DPTRAIN_H5_CHECK(H5Oopen(file, name.c_str(), H5P_DEFAULT)), H5Oclose);
    if (H5Iget_type(object.id()) != H5I_DATASET) continue;
    Handle create(DPTRAIN_H5_CHECK(H5Dget_create_plist(object.id())), H5Pclose);
    check_stored_here(create.id(), where + ": dataset '/" + name + "'");
  }
}

}  // namespace dptrain::h5
