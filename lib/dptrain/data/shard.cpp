#include "dptrain/data/shard.hpp"

#include <filesystem>

namespace dptrain::data {
namespace {
void write_header(hid_t file, const ShardHeader& h) {
  h5::write_attribute(file, "format", kShardFormat);
  h5::write_attribute(file, "version", std::int64_t{kShardVersion});
  h5::write_attribute(file, "split", h.split);
  h5::write_attribute(file, "shard_index", h.shard_index);
  h5::write_attribute(file, "shard_count", h.shard_count);
  h5::write_attribute(file, "first_sample", h.first_sample);
  h5::write_attribute(file, "samples", h.samples);
  h5::write_attribute(file, "height", h.height);
  h5::write_attribute(file, "width", h.width);
  h5::write_attribute(file, "channels", h.channels);
  h5::write_attribute(file, "encoding", h.encoding);
  h5::write_attribute(file, "classes", h.classes);
}

void write_labels(hid_t file, const ShardHeader& h, const std::int32_t* labels) {
  const hsize_t dims[1] = {static_cast<hsize_t>(h.samples)};
  h5::Handle space(H5_CHECK(H5Screate_simple(1, dims, nullptr)), H5Sclose);
  h5::Handle set(H5_CHECK(H5Dcreate2(file, "labels", H5T_STD_I32LE, space.id(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
                 H5Dclose);
  H5_CHECK(H5Dwrite(set.id(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels));
}

// Writes through a temporary name; `body` fills the open file.
template <typename Body>
void write_atomically(const std::string& path, const ShardHeader& h, const std::int32_t* labels, Body&& body) {
  const std::string temporary = path + ".tmp";
  {
    h5::Handle file = h5::create_file(temporary);
    write_header(file.id(), h);
    write_labels(file.id(), h, labels);
    body(file.id());
    H5_CHECK(H5Fflush(file.id(), H5F_SCOPE_GLOBAL));
  }
  std::filesystem::rename(temporary, path);
}
}  // namespace

void write_raw_shard(const std::string& path, const ShardHeader& h, const std::uint8_t* pixels,
                     const std::int32_t* labels) {
  write_atomically(path, h, labels, [&](hid_t file) {
    const hsize_t dims[4] = {static_cast<hsize_t>(h.samples), static_cast<hsize_t>(h.height),
                             static_cast<hsize_t>(h.width), static_cast<hsize_t>(h.channels)};
    const hsize_t chunk[4] = {1, dims[1], dims[2], dims[3]};  // one image per chunk: random access
    h5::Handle space(H5_CHECK(H5Screate_simple(4, dims, nullptr)), H5Sclose);
    h5::Handle create(H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)), H5Pclose);
    H5_CHECK(H5Pset_chunk(create.id(), 4, chunk));
    h5::Handle set(
        H5_CHECK(H5Dcreate2(file, "images", H5T_STD_U8LE, space.id(), H5P_DEFAULT, create.id(), H5P_DEFAULT)), H5Dclose);
    H5_CHECK(H5Dwrite(set.id(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pixels));
  });
}

void write_jpeg_shard(const std::string& path, const ShardHeader& h, const std::vector<std::vector<std::uint8_t>>& jpegs,
                      const std::int32_t* labels) {
  DPTRAIN_CHECK(static_cast<std::int64_t>(jpegs.size()) == h.samples, path, ": ", jpegs.size(),
                " encoded images for a shard of ", h.samples, " samples");
  write_atomically(path, h, labels, [&](hid_t file) {
    const hsize_t dims[1] = {static_cast<hsize_t>(h.samples)};
    h5::Handle space(H5_CHECK(H5Screate_simple(1, dims, nullptr)), H5Sclose);
    h5::Handle type(H5_CHECK(H5Tvlen_create(H5T_NATIVE_UINT8)), H5Tclose);
    h5::Handle set(H5_CHECK(H5Dcreate2(file, "jpeg", type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
                   H5Dclose);
    std::vector<hvl_t> rows(jpegs.size());
    for (std::size_t i = 0; i < jpegs.size(); ++i) {
      rows[i].len = jpegs[i].size();
      rows[i].p = const_cast<std::uint8_t*>(jpegs[i].data());
    }
    H5_CHECK(H5Dwrite(set.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()));
  });
}

ShardHeader read_shard_header(const std::string& path) {
  h5::Handle file = h5::open_file(path);
  const hid_t f = file.id();
  const std::string format = h5::read_string_attribute(f, "format", path);
  DPTRAIN_CHECK(format == kShardFormat, path, ": format is '", format, "', not a dptrain shard");
  const std::int64_t version = h5::read_int_attribute(f, "version", path);
  DPTRAIN_CHECK(version == kShardVersion, path, ": shard format version ", version, " is not supported (this dptrain reads ",
                kShardVersion, ")");
  ShardHeader h;
  h.split = h5::read_string_attribute(f, "split", path);
  h.shard_index = h5::read_int_attribute(f, "shard_index", path);
  h.shard_count = h5::read_int_attribute(f, "shard_count", path);
  h.first_sample = h5::read_int_attribute(f, "first_sample", path);
  h.samples = h5::read_int_attribute(f, "samples", path);
  h.height = h5::read_int_attribute(f, "height", path);
  h.width = h5::read_int_attribute(f, "width", path);
  h.channels = h5::read_int_attribute(f, "channels", path);
  h.encoding = h5::read_string_attribute(f, "encoding", path);
  h.classes = h5::read_int_attribute(f, "classes", path);
  return h;
}

namespace {
void check_field(const std::string& path, const char* field, std::int64_t actual, std::int64_t expected) {
  DPTRAIN_CHECK(actual == expected, path, ": '", field, "' is ", actual, " but the manifest says ", expected);
}
void check_field(const std::string& path, const char* field, const std::string& actual, const std::string& expected) {
  DPTRAIN_CHECK(actual == expected, path, ": '", field, "' is '", actual, "' but the manifest says '", expected, "'");
}
}  // namespace

ShardReader::ShardReader(const std::string& path, const ShardHeader& expected, std::size_t cache_bytes)
    : path_(path), header_(read_shard_header(path)) {
  const ShardHeader& h = header_;
  check_field(path, "split", h.split, expected.split);
  check_field(path, "shard_index", h.shard_index, expected.shard_index);
  check_field(path, "shard_count", h.shard_count, expected.shard_count);
  check_field(path, "first_sample", h.first_sample, expected.first_sample);
  check_field(path, "samples", h.samples, expected.samples);
  check_field(path, "height", h.height, expected.height);
  check_field(path, "width", h.width, expected.width);
  check_field(path, "channels", h.channels, expected.channels);
  check_field(path, "encoding", h.encoding, expected.encoding);
  check_field(path, "classes", h.classes, expected.classes);

  file_ = h5::open_file(path);
  {
    h5::Handle labels = h5::open_dataset(file_.id(), "labels", path);
    const auto dims = h5::dataset_dims(labels.id());
    DPTRAIN_CHECK(dims.size() == 1 && static_cast<std::int64_t>(dims[0]) == h.samples, path,
                  ": 'labels' does not hold one label for each of the ", h.samples, " samples");
    labels_.resize(static_cast<std::size_t>(h.samples));
    H5_CHECK(H5Dread(labels.id(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels_.data()));
    for (std::size_t i = 0; i < labels_.size(); ++i) {
      DPTRAIN_CHECK(labels_[i] >= 0 && labels_[i] < h.classes, path, ": sample ", i, " has label ", labels_[i],
                    ", outside the ", h.classes, " classes");
    }
  }
  const bool raw = h.encoding == "raw";
  h5::Handle access(H5_CHECK(H5Pcreate(H5P_DATASET_ACCESS)), H5Pclose);
  // A chunk cache of about one batch of images: every image is one chunk, read once per epoch.
  H5_CHECK(H5Pset_chunk_cache(access.id(), 521, cache_bytes, 1.0));
  const char* name = raw ? "images" : "jpeg";
  DPTRAIN_CHECK(H5Lexists(file_.id(), name, H5P_DEFAULT) > 0, path, ": has no dataset '", name, "'");
  data_ = h5::Handle(H5_CHECK(H5Dopen2(file_.id(), name, access.id())), H5Dclose);
  const auto dims = h5::dataset_dims(data_.id());
  if (raw) {
    DPTRAIN_CHECK(dims.size() == 4 && static_cast<std::int64_t>(dims[0]) == h.samples &&
                      static_cast<std::int64_t>(dims[1]) == h.height && static_cast<std::int64_t>(dims[2]) == h.width &&
                      static_cast<std::int64_t>(dims[3]) == h.channels,
                  path, ": 'images' is not ", h.samples, "x", h.height, "x", h.width, "x", h.channels);
  } else {
    DPTRAIN_CHECK(dims.size() == 1 && static_cast<std::int64_t>(dims[0]) == h.samples, path,
                  ": 'jpeg' does not hold ", h.samples, " images");
  }
}

void ShardReader::read_image(std::int64_t i, std::uint8_t* out) const {
  DPTRAIN_CHECK(header_.encoding == "raw", path_, ": read_image on a jpeg shard");
  DPTRAIN_CHECK(i >= 0 && i < header_.samples, path_, ": sample ", i, " is outside the shard");
  const hsize_t start[4] = {static_cast<hsize_t>(i), 0, 0, 0};
  const hsize_t count[4] = {1, static_cast<hsize_t>(header_.height), static_cast<hsize_t>(header_.width),
                            static_cast<hsize_t>(header_.channels)};
  h5::Handle file_space(H5_CHECK(H5Dget_space(data_.id())), H5Sclose);
  H5_CHECK(H5Sselect_hyperslab(file_space.id(), H5S_SELECT_SET, start, nullptr, count, nullptr));
  h5::Handle memory(H5_CHECK(H5Screate_simple(4, count, nullptr)), H5Sclose);
  H5_CHECK(H5Dread(data_.id(), H5T_NATIVE_UINT8, memory.id(), file_space.id(), H5P_DEFAULT, out));
}

std::vector<std::uint8_t> ShardReader::read_jpeg(std::int64_t i) const {
  DPTRAIN_CHECK(header_.encoding == "jpeg", path_, ": read_jpeg on a raw shard");
  DPTRAIN_CHECK(i >= 0 && i < header_.samples, path_, ": sample ", i, " is outside the shard");
  const hsize_t start[1] = {static_cast<hsize_t>(i)}, count[1] = {1};
  h5::Handle file_space(H5_CHECK(H5Dget_space(data_.id())), H5Sclose);
  H5_CHECK(H5Sselect_hyperslab(file_space.id(), H5S_SELECT_SET, start, nullptr, count, nullptr));
  h5::Handle memory(H5_CHECK(H5Screate_simple(1, count, nullptr)), H5Sclose);
  h5::Handle type(H5_CHECK(H5Tvlen_create(H5T_NATIVE_UINT8)), H5Tclose);
  hvl_t row{};
  H5_CHECK(H5Dread(data_.id(), type.id(), memory.id(), file_space.id(), H5P_DEFAULT, &row));
  std::vector<std::uint8_t> bytes(static_cast<const std::uint8_t*>(row.p), static_cast<const std::uint8_t*>(row.p) + row.len);
  H5_CHECK(H5Dvlen_reclaim(type.id(), memory.id(), H5P_DEFAULT, &row));
  return bytes;
}

}  // namespace dptrain::data
