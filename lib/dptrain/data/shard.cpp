#include "dptrain/data/shard.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "dptrain/core/file_write.hpp"
#include "dptrain/data/chunk_offsets.hpp"
#include "dptrain/data/sample_file.hpp"
#include "dptrain/hdf5/checks.hpp"
#include "dptrain/hdf5/record_attributes.hpp"

namespace dptrain::data {
namespace {
void write_header(hid_t file, const ShardHeader& h, int version) {
  h5::write_attribute(file, "format", kShardFormat);
  h5::write_attribute(file, "version", std::int64_t{version});
  h5::write_record_attributes(file, h);
}

void write_labels(hid_t file, const ShardHeader& h, const std::int32_t* labels) {
  const hsize_t dims[1] = {static_cast<hsize_t>(h.samples)};
  h5::Handle space(DPTRAIN_H5_CHECK(H5Screate_simple(1, dims, nullptr)), H5Sclose);
  const h5::Handle create = h5::untimed_creation(H5P_DATASET_CREATE);
  h5::Handle set(
      DPTRAIN_H5_CHECK(H5Dcreate2(file, "labels", H5T_STD_I32LE, space.id(), H5P_DEFAULT, create.id(), H5P_DEFAULT)),
      H5Dclose);
  DPTRAIN_H5_CHECK(H5Dwrite(set.id(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels));
}

// Builds the shard in memory, `body` filling the open file, then writes it through a temporary name
// (removed on any failure) renamed to `path`: a full disk or a file-size limit is an error naming the
// temporary and the cause, never a crash inside HDF5, and leaves no partial shard.
template <typename Body>
void write_atomically(const std::string& path, const ShardHeader& h, const std::int32_t* labels, Body&& body,
                      int version = kShardVersion) {
  std::string image;
  try {
    // The HDF5 1.10 file format: every piece of metadata (superblock, object headers, the chunk index)
    // carries a checksum, so a damaged shard is refused by HDF5's own check instead of being parsed
    // (HDF5 1.10 parsing a damaged version-0 object header can read freed memory: found by unit_fuzz
    // under the asan preset). Read by HDF5 1.10 and newer (h5py, h5dump and Spack's 1.14 included).
    h5::Handle access(DPTRAIN_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)), H5Pclose);
    DPTRAIN_H5_CHECK(H5Pset_libver_bounds(access.id(), H5F_LIBVER_V110, H5F_LIBVER_V110));
    image = h5::build_file_image(access.id(), [&](hid_t file) {
      write_header(file, h, version);
      write_labels(file, h, labels);
      body(file);
    });
  } catch (const Error& e) {
    throw Error(detail::concat("writing shard ", path, ": ", e.what()));
  }
  write_file_through_temporary(path + ".tmp", path, image);
}
}  // namespace

void write_raw_shard(const std::string& path, const ShardHeader& h, const std::uint8_t* pixels,
                     const std::int32_t* labels, const RawShardLayout& layout) {
  DPTRAIN_CHECK(layout.images_per_chunk >= 0 && layout.gzip_level >= 0 && layout.gzip_level <= 9 &&
                    (layout.gzip_level == 0 || layout.images_per_chunk > 0),
                path, ": a raw shard's images per chunk must not be negative, and gzip (0-9) needs chunks");
  write_atomically(path, h, labels, [&](hid_t file) {
    const hsize_t dims[4] = {static_cast<hsize_t>(h.samples), static_cast<hsize_t>(h.height),
                             static_cast<hsize_t>(h.width), static_cast<hsize_t>(h.channels)};
    h5::Handle space(DPTRAIN_H5_CHECK(H5Screate_simple(4, dims, nullptr)), H5Sclose);
    h5::Handle create = h5::untimed_creation(H5P_DATASET_CREATE);
    if (layout.images_per_chunk == 0) {
      // Contiguous (the default): sample i's bytes start at a fixed distance from the dataset's, so the
      // loader reads with pread without looking anything up (HDF5 1.10 finds N chunks in O(N^2)).
      DPTRAIN_H5_CHECK(H5Pset_layout(create.id(), H5D_CONTIGUOUS));
    } else {
      const hsize_t per_chunk =
          std::min<hsize_t>(static_cast<hsize_t>(layout.images_per_chunk), std::max<hsize_t>(dims[0], 1));
      const hsize_t chunk[4] = {per_chunk, dims[1], dims[2], dims[3]};
      DPTRAIN_H5_CHECK(H5Pset_chunk(create.id(), 4, chunk));
      if (layout.gzip_level > 0) {
        DPTRAIN_H5_CHECK(H5Pset_deflate(create.id(), static_cast<unsigned>(layout.gzip_level)));
      }
    }
    h5::Handle set(
        DPTRAIN_H5_CHECK(H5Dcreate2(file, "images", H5T_STD_U8LE, space.id(), H5P_DEFAULT, create.id(), H5P_DEFAULT)),
        H5Dclose);
    DPTRAIN_H5_CHECK(H5Dwrite(set.id(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pixels));
  });
}

namespace {
// Version 1's JPEG layout: one variable-length row per image.
void write_jpeg_vlen(hid_t file, const std::vector<std::vector<std::uint8_t>>& jpegs) {
  const hsize_t dims[1] = {static_cast<hsize_t>(jpegs.size())};
  h5::Handle space(DPTRAIN_H5_CHECK(H5Screate_simple(1, dims, nullptr)), H5Sclose);
  h5::Handle type(DPTRAIN_H5_CHECK(H5Tvlen_create(H5T_NATIVE_UINT8)), H5Tclose);
  const h5::Handle create = h5::untimed_creation(H5P_DATASET_CREATE);
  h5::Handle set(
      DPTRAIN_H5_CHECK(H5Dcreate2(file, "jpeg", type.id(), space.id(), H5P_DEFAULT, create.id(), H5P_DEFAULT)),
      H5Dclose);
  std::vector<hvl_t> rows(jpegs.size());
  for (std::size_t i = 0; i < jpegs.size(); ++i) {
    rows[i].len = jpegs[i].size();
    rows[i].p = const_cast<std::uint8_t*>(jpegs[i].data());
  }
  DPTRAIN_H5_CHECK(H5Dwrite(set.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()));
}

// Version 2's: the bytes back to back in one contiguous dataset (so that a sample is one pread at a
// known offset, no HDF5 call), and where each image starts.
void write_jpeg_packed(hid_t file, const std::vector<std::vector<std::uint8_t>>& jpegs, const JpegShardLayout& layout) {
  std::vector<std::uint64_t> starts{0};
  for (const auto& jpeg : jpegs) starts.push_back(starts.back() + jpeg.size());
  std::vector<std::uint8_t> packed;
  packed.reserve(static_cast<std::size_t>(starts.back()));
  for (const auto& jpeg : jpegs) packed.insert(packed.end(), jpeg.begin(), jpeg.end());
  {
    const hsize_t dims[1] = {static_cast<hsize_t>(packed.size())};
    h5::Handle space(DPTRAIN_H5_CHECK(H5Screate_simple(1, dims, nullptr)), H5Sclose);
    h5::Handle create = h5::untimed_creation(H5P_DATASET_CREATE);
    if (layout.chunk_bytes > 0) {
      const hsize_t chunk[1] = {
          std::min<hsize_t>(static_cast<hsize_t>(layout.chunk_bytes), std::max<hsize_t>(dims[0], 1))};
      DPTRAIN_H5_CHECK(H5Pset_chunk(create.id(), 1, chunk));
      if (layout.gzip_level > 0)
        DPTRAIN_H5_CHECK(H5Pset_deflate(create.id(), static_cast<unsigned>(layout.gzip_level)));
    } else {
      // Allocated at creation: an empty shard still has a (zero-byte) place, and nothing is left to
      // allocate lazily.
      DPTRAIN_H5_CHECK(H5Pset_layout(create.id(), H5D_CONTIGUOUS));
      DPTRAIN_H5_CHECK(H5Pset_alloc_time(create.id(), H5D_ALLOC_TIME_EARLY));
    }
    h5::Handle set(DPTRAIN_H5_CHECK(
                       H5Dcreate2(file, "jpeg_bytes", H5T_STD_U8LE, space.id(), H5P_DEFAULT, create.id(), H5P_DEFAULT)),
                   H5Dclose);
    if (!packed.empty()) {
      DPTRAIN_H5_CHECK(H5Dwrite(set.id(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, packed.data()));
    }
  }
  const hsize_t dims[1] = {static_cast<hsize_t>(starts.size())};
  h5::Handle space(DPTRAIN_H5_CHECK(H5Screate_simple(1, dims, nullptr)), H5Sclose);
  const h5::Handle create = h5::untimed_creation(H5P_DATASET_CREATE);
  h5::Handle set(DPTRAIN_H5_CHECK(H5Dcreate2(file, "jpeg_offsets", H5T_STD_U64LE, space.id(), H5P_DEFAULT, create.id(),
                                             H5P_DEFAULT)),
                 H5Dclose);
  DPTRAIN_H5_CHECK(H5Dwrite(set.id(), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, starts.data()));
}
}  // namespace

std::uint64_t max_jpeg_bytes(const ShardHeader& h) {
  return 8 * static_cast<std::uint64_t>(std::max<std::int64_t>(h.height, 0)) *
             static_cast<std::uint64_t>(std::max<std::int64_t>(h.width, 0)) *
             static_cast<std::uint64_t>(std::max<std::int64_t>(h.channels, 0)) +
         (64u << 10);
}

void write_jpeg_shard(const std::string& path, const ShardHeader& h,
                      const std::vector<std::vector<std::uint8_t>>& jpegs, const std::int32_t* labels,
                      const JpegShardLayout& layout) {
  DPTRAIN_CHECK(static_cast<std::int64_t>(jpegs.size()) == h.samples, path, ": ", jpegs.size(),
                " encoded images for a shard of ", h.samples, " samples");
  DPTRAIN_CHECK(layout.chunk_bytes >= 0 && layout.gzip_level >= 0 && layout.gzip_level <= 9 &&
                    (layout.gzip_level == 0 || layout.chunk_bytes > 0),
                path, ": a JPEG shard's chunk size must not be negative, and gzip (0-9) needs chunks");
  if (layout.vlen) {
    write_atomically(
        path, h, labels, [&](hid_t file) { write_jpeg_vlen(file, jpegs); }, 1);
  } else {
    write_atomically(path, h, labels, [&](hid_t file) { write_jpeg_packed(file, jpegs, layout); });
  }
}

ShardHeader expected_shard_header(const Manifest& m, const std::string& split, std::size_t shard) {
  const SplitInfo& s = m.split(split);
  DPTRAIN_CHECK(shard < s.shards.size(), "split '", split, "' has ", s.shards.size(), " shards, not ", shard + 1);
  ShardHeader h;
  h.split = split;
  h.shard_index = static_cast<std::int64_t>(shard);
  h.shard_count = static_cast<std::int64_t>(s.shards.size());
  h.first_sample = s.shards[shard].first_sample;
  h.samples = s.shards[shard].samples;
  h.height = m.height;
  h.width = m.width;
  h.channels = m.channels;
  h.encoding = m.encoding;
  h.classes = m.class_count();
  return h;
}

ShardHeader read_shard_header(const std::string& path) {
  const h5::Handle file = h5::open_file(path);
  return read_shard_header(file.id(), path);
}

ShardHeader read_shard_header(hid_t f, const std::string& path) {
  const std::string format = h5::read_string_attribute(f, "format", path);
  DPTRAIN_CHECK(format == kShardFormat, path, ": format is '", format, "', not a dptrain shard");
  const std::int64_t version = h5::read_int_attribute(f, "version", path);
  DPTRAIN_CHECK(version >= kOldestShardVersion && version <= kShardVersion, path, ": shard format version ", version,
                " is not supported (this dptrain reads ", kOldestShardVersion, " to ", kShardVersion, ")");
  ShardHeader h;
  h5::read_record_attributes(f, h, path);
  return h;
}

namespace {
// Every header field against the manifest's, naming the first that differs.
void check_header(const std::string& path, const ShardHeader& actual, const ShardHeader& expected) {
  auto shown = [](const FieldValue& v) {
    // (appended, not "'" + text: GCC 12 warns falsely about the operator+ form)
    std::string text = std::holds_alternative<std::string>(v) ? std::string("'") : std::string();
    text.append(field_value_text(v));
    if (std::holds_alternative<std::string>(v)) text.push_back('\'');
    return text;
  };
  const std::vector<NamedFieldValue> a = field_values(actual), e = field_values(expected);
  for (std::size_t i = 0; i < a.size(); ++i) {
    DPTRAIN_CHECK(a[i].value == e[i].value, path, ": '", a[i].name, "' is ", shown(a[i].value),
                  " but the manifest says ", shown(e[i].value));
  }
}
}  // namespace

ShardReader::ShardReader(const std::string& path, const ShardHeader& expected, std::size_t cache_bytes)
    : path_(path), file_h5_(h5::open_file(path)), header_(read_shard_header(file_h5_.id(), path)) {
  const ShardHeader& h = header_;
  check_header(path, h, expected);

  {
    h5::Handle labels = h5::open_dataset(file_h5_.id(), "labels", path);
    const auto dims = h5::dataset_dims(labels.id());
    DPTRAIN_CHECK(dims.size() == 1 && static_cast<std::int64_t>(dims[0]) == h.samples, path,
                  ": 'labels' does not hold one label for each of the ", h.samples, " samples");
    h5::check_element_type(labels.id(), h5::Stored::label, path + ": 'labels'");
    h5::check_storage(labels.id(), path + ": 'labels'");
    labels_.resize(static_cast<std::size_t>(h.samples));
    DPTRAIN_H5_CHECK(H5Dread(labels.id(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels_.data()));
    for (std::size_t i = 0; i < labels_.size(); ++i) {
      DPTRAIN_CHECK(labels_[i] >= 0 && labels_[i] < h.classes, path, ": sample ", i, " has label ", labels_[i],
                    ", outside the ", h.classes, " classes");
    }
  }
  if (h.encoding != "raw") {
    open_jpeg(h5::read_int_attribute(file_h5_.id(), "version", path));
    return;
  }
  h5::Handle access(DPTRAIN_H5_CHECK(H5Pcreate(H5P_DATASET_ACCESS)), H5Pclose);
  // A chunk cache of about one batch of images: every image is one chunk, read once per epoch.
  DPTRAIN_H5_CHECK(H5Pset_chunk_cache(access.id(), 521, cache_bytes, 1.0));
  DPTRAIN_CHECK(H5Lexists(file_h5_.id(), "images", H5P_DEFAULT) > 0, path, ": has no dataset 'images'");
  data_ = h5::Handle(DPTRAIN_H5_CHECK(H5Dopen2(file_h5_.id(), "images", access.id())), H5Dclose);
  const auto dims = h5::dataset_dims(data_.id());
  DPTRAIN_CHECK(dims.size() == 4 && static_cast<std::int64_t>(dims[0]) == h.samples &&
                    static_cast<std::int64_t>(dims[1]) == h.height && static_cast<std::int64_t>(dims[2]) == h.width &&
                    static_cast<std::int64_t>(dims[3]) == h.channels,
                path, ": 'images' is not ", h.samples, "x", h.height, "x", h.width, "x", h.channels);
  // Read as uint8 they must be uint8: HDF5 would convert float pixels to zeros without a word.
  h5::check_element_type(data_.id(), h5::Stored::u8, path + ": 'images'");
  h5::check_storage(data_.id(), path + ": 'images'");
  open_direct_path();
}

void ShardReader::open_jpeg(std::int64_t version) {
  const ShardHeader& h = header_;
  const std::string& path = path_;
  if (version < 2) {
    data_ = h5::open_dataset(file_h5_.id(), "jpeg", path);
    h5::check_storage(data_.id(), path + ": 'jpeg'");
    {
      h5::Handle type(DPTRAIN_H5_CHECK(H5Dget_type(data_.id())), H5Tclose);
      h5::Handle base(DPTRAIN_H5_CHECK(H5Tget_super(type.id())), H5Tclose);
      DPTRAIN_CHECK(DPTRAIN_H5_CHECK(H5Tget_class(type.id())) == H5T_VLEN &&
                        DPTRAIN_H5_CHECK(H5Tget_class(base.id())) == H5T_INTEGER && H5Tget_size(base.id()) == 1,
                    path, ": 'jpeg' is not variable-length rows of bytes");
    }
    const auto dims = h5::dataset_dims(data_.id());
    DPTRAIN_CHECK(dims.size() == 1 && static_cast<std::int64_t>(dims[0]) == h.samples, path, ": 'jpeg' does not hold ",
                  h.samples, " images");
    read_path_ = "HDF5 (H5Dread under the lock): JPEG bytes are variable-length (shard format version 1)";
    // One element (an hvl_t) at a time is converted; the default 1 MB buffer, calloc'ed for every
    // H5Dread, cost a sixth of a JPEG sample's time.
    transfer_ = h5::Handle(DPTRAIN_H5_CHECK(H5Pcreate(H5P_DATASET_XFER)), H5Pclose);
    DPTRAIN_H5_CHECK(H5Pset_buffer(transfer_.id(), 4096, nullptr, nullptr));
    const hsize_t one[1] = {1};
    jpeg_type_ = h5::Handle(DPTRAIN_H5_CHECK(H5Tvlen_create(H5T_NATIVE_UINT8)), H5Tclose);
    jpeg_memory_ = h5::Handle(DPTRAIN_H5_CHECK(H5Screate_simple(1, one, nullptr)), H5Sclose);
    jpeg_file_space_ = h5::Handle(DPTRAIN_H5_CHECK(H5Dget_space(data_.id())), H5Sclose);
    return;
  }
  // Version 2: where each image starts, checked whole before any sample is read or allocated for.
  {
    h5::Handle starts = h5::open_dataset(file_h5_.id(), "jpeg_offsets", path);
    const auto dims = h5::dataset_dims(starts.id());
    DPTRAIN_CHECK(dims.size() == 1 && static_cast<std::int64_t>(dims[0]) == h.samples + 1, path,
                  ": 'jpeg_offsets' does not hold the ", h.samples + 1, " offsets of ", h.samples, " images");
    h5::check_element_type(starts.id(), h5::Stored::u64, path + ": 'jpeg_offsets'");
    h5::check_storage(starts.id(), path + ": 'jpeg_offsets'");
    jpeg_starts_.resize(static_cast<std::size_t>(h.samples + 1));
    DPTRAIN_H5_CHECK(H5Dread(starts.id(), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, jpeg_starts_.data()));
  }
  data_ = h5::open_dataset(file_h5_.id(), "jpeg_bytes", path);
  const auto dims = h5::dataset_dims(data_.id());
  DPTRAIN_CHECK(dims.size() == 1, path, ": 'jpeg_bytes' is not one-dimensional");
  h5::check_element_type(data_.id(), h5::Stored::u8, path + ": 'jpeg_bytes'");
  h5::check_storage(data_.id(), path + ": 'jpeg_bytes'");
  DPTRAIN_CHECK(jpeg_starts_.front() == 0 && jpeg_starts_.back() == dims[0], path, ": 'jpeg_offsets' spans bytes ",
                jpeg_starts_.front(), " to ", jpeg_starts_.back(), " of the ", dims[0], " in 'jpeg_bytes'");
  const std::uint64_t cap = max_jpeg_bytes(h);
  for (std::size_t i = 0; i + 1 < jpeg_starts_.size(); ++i) {
    DPTRAIN_CHECK(jpeg_starts_[i + 1] > jpeg_starts_[i], path, ": sample ", i, "'s JPEG entry is empty",
                  jpeg_starts_[i + 1] < jpeg_starts_[i] ? " (its offsets run backwards)" : "");
    DPTRAIN_CHECK(jpeg_starts_[i + 1] - jpeg_starts_[i] <= cap, path, ": sample ", i, "'s JPEG entry has ",
                  jpeg_starts_[i + 1] - jpeg_starts_[i], " bytes, more than the ", cap, " a ", h.height, "x", h.width,
                  "x", h.channels, " image may have");
  }
  open_direct_path();
}

ShardReader::~ShardReader() = default;

std::uint64_t ShardReader::sample_bytes() const {
  return static_cast<std::uint64_t>(header_.height) * static_cast<std::uint64_t>(header_.width) *
         static_cast<std::uint64_t>(header_.channels);
}

std::uint64_t ShardReader::bytes_of(std::int64_t i) const {
  if (header_.encoding == "raw") return sample_bytes();
  const auto k = static_cast<std::size_t>(i);
  return jpeg_starts_[k + 1] - jpeg_starts_[k];
}

void ShardReader::open_direct_path() {
  const bool raw = header_.encoding == "raw";
  auto file = std::make_shared<SampleFile>(path_);
  ChunkOffsets found = raw ? find_raw_offsets(file_h5_.id(), data_.id(), header_.samples, sample_bytes(), file->size())
                           : find_jpeg_offsets(file_h5_.id(), data_.id(), jpeg_starts_, file->size());
  // The first and the last sample read both ways: addresses that HDF5 reports relative to something
  // else than the file's first byte, or a wrong stride, would show here before any training reads a
  // wrong pixel.
  for (const std::int64_t i : {std::int64_t{0}, header_.samples - 1}) {
    if (!found.direct() || i < 0) break;
    const std::uint64_t bytes = bytes_of(i);
    std::vector<std::uint8_t> through_hdf5(bytes), direct(bytes);
    if (raw) {
      read_image_hdf5(i, through_hdf5.data());
    } else {
      read_jpeg_hdf5(i, through_hdf5);
    }
    file->read(found.offsets[static_cast<std::size_t>(i)], bytes, direct.data(), "a sample");
    if (through_hdf5 != direct) found = ChunkOffsets{{}, "the offsets found do not give HDF5's bytes"};
  }
  if (!found.direct()) {
    read_path_ = "HDF5 (H5Dread under the lock): " + found.fallback_reason;
    return;
  }
  offsets_ = std::move(found.offsets);
  file_size_ = file->size();
  file_ = std::move(file);
  read_path_ = found.direct_path;
  // HDF5 is done with: no HDF5 id stays open for this shard, however many shards a run touches.
  data_.close();
  file_h5_.close();
}

void DirectRead::read(void* out) const { file->read(offset, bytes, out, "a sample's bytes"); }

DirectRead ShardReader::direct_read(std::int64_t i) {
  DPTRAIN_CHECK(reads_directly(), path_, ": direct_read on a shard read through HDF5");
  DPTRAIN_CHECK(i >= 0 && i < header_.samples, path_, ": sample ", i, " is outside the shard");
  if (!file_) {
    auto file = std::make_shared<SampleFile>(path_);
    DPTRAIN_CHECK(file->size() == file_size_, path_, ": the shard changed while training read it (", file_size_,
                  " bytes when opened, now ", file->size(), ")");
    file_ = std::move(file);
  }
  return DirectRead{file_, offsets_[static_cast<std::size_t>(i)], bytes_of(i)};
}

void ShardReader::close_file() {
  if (reads_directly()) file_.reset();
}

void ShardReader::read_image(std::int64_t i, std::uint8_t* out) const {
  DPTRAIN_CHECK(header_.encoding == "raw", path_, ": read_image on a jpeg shard");
  DPTRAIN_CHECK(i >= 0 && i < header_.samples, path_, ": sample ", i, " is outside the shard");
  if (reads_directly()) {
    const std::shared_ptr<const SampleFile> file = file_ ? file_ : std::make_shared<const SampleFile>(path_);
    DirectRead{file, offsets_[static_cast<std::size_t>(i)], sample_bytes()}.read(out);
    return;
  }
  read_image_hdf5(i, out);
}

void ShardReader::read_image_hdf5(std::int64_t i, std::uint8_t* out) const {
  const hsize_t start[4] = {static_cast<hsize_t>(i), 0, 0, 0};
  const hsize_t count[4] = {1, static_cast<hsize_t>(header_.height), static_cast<hsize_t>(header_.width),
                            static_cast<hsize_t>(header_.channels)};
  h5::Handle file_space(DPTRAIN_H5_CHECK(H5Dget_space(data_.id())), H5Sclose);
  DPTRAIN_H5_CHECK(H5Sselect_hyperslab(file_space.id(), H5S_SELECT_SET, start, nullptr, count, nullptr));
  h5::Handle memory(DPTRAIN_H5_CHECK(H5Screate_simple(4, count, nullptr)), H5Sclose);
  DPTRAIN_H5_CHECK(H5Dread(data_.id(), H5T_NATIVE_UINT8, memory.id(), file_space.id(), H5P_DEFAULT, out));
}

std::vector<std::uint8_t> ShardReader::read_jpeg(std::int64_t i) const {
  std::vector<std::uint8_t> bytes;
  read_jpeg(i, bytes);
  return bytes;
}

void ShardReader::read_jpeg(std::int64_t i, std::vector<std::uint8_t>& out) const {
  DPTRAIN_CHECK(header_.encoding == "jpeg", path_, ": read_jpeg on a raw shard");
  DPTRAIN_CHECK(i >= 0 && i < header_.samples, path_, ": sample ", i, " is outside the shard");
  if (reads_directly()) {
    const std::shared_ptr<const SampleFile> file = file_ ? file_ : std::make_shared<const SampleFile>(path_);
    out.resize(bytes_of(i));
    DirectRead{file, offsets_[static_cast<std::size_t>(i)], bytes_of(i)}.read(out.data());
    return;
  }
  read_jpeg_hdf5(i, out);
}

void ShardReader::read_jpeg_hdf5(std::int64_t i, std::vector<std::uint8_t>& out) const {
  if (!jpeg_starts_.empty()) {  // version 2, not readable directly (chunked or filtered)
    const auto k = static_cast<std::size_t>(i);
    const hsize_t start[1] = {jpeg_starts_[k]}, count[1] = {jpeg_starts_[k + 1] - jpeg_starts_[k]};
    out.resize(static_cast<std::size_t>(count[0]));
    h5::Handle file_space(DPTRAIN_H5_CHECK(H5Dget_space(data_.id())), H5Sclose);
    DPTRAIN_H5_CHECK(H5Sselect_hyperslab(file_space.id(), H5S_SELECT_SET, start, nullptr, count, nullptr));
    h5::Handle memory(DPTRAIN_H5_CHECK(H5Screate_simple(1, count, nullptr)), H5Sclose);
    DPTRAIN_H5_CHECK(H5Dread(data_.id(), H5T_NATIVE_UINT8, memory.id(), file_space.id(), H5P_DEFAULT, out.data()));
    return;
  }
  const hsize_t start[1] = {static_cast<hsize_t>(i)}, count[1] = {1};
  DPTRAIN_H5_CHECK(H5Sselect_hyperslab(jpeg_file_space_.id(), H5S_SELECT_SET, start, nullptr, count, nullptr));
  hvl_t row{};
  DPTRAIN_H5_CHECK(
      H5Dread(data_.id(), jpeg_type_.id(), jpeg_memory_.id(), jpeg_file_space_.id(), transfer_.id(), &row));
  try {
    DPTRAIN_CHECK(row.len > 0, path_, ": sample ", i, "'s JPEG entry is empty");
    DPTRAIN_CHECK(row.len <= max_jpeg_bytes(header_), path_, ": sample ", i, "'s JPEG entry has ", row.len,
                  " bytes, more than the ", max_jpeg_bytes(header_), " an image of the shard may have");
    out.assign(static_cast<const std::uint8_t*>(row.p), static_cast<const std::uint8_t*>(row.p) + row.len);
  } catch (...) {
    H5Dvlen_reclaim(jpeg_type_.id(), jpeg_memory_.id(), H5P_DEFAULT, &row);  // already failing: only free
    throw;
  }
  DPTRAIN_H5_CHECK(H5Dvlen_reclaim(jpeg_type_.id(), jpeg_memory_.id(), H5P_DEFAULT, &row));
}

}  // namespace dptrain::data
