#pragma once
// One HDF5 shard: `images` (uint8 N x H x W x C, contiguous; one chunk per image from earlier converters) or, for JPEG,
// `jpeg_bytes` (every image's bytes back to back, contiguous) with `jpeg_offsets` (uint64 N+1: image i is bytes
// [offsets[i], offsets[i+1])); `labels` (int32 N), and root attributes that repeat the geometry, the
// split, the shard's index and its first global sample, so a shard describes itself. Version 1
// shards stored JPEG as one variable-length `jpeg` dataset; they are still read. Documented in
// datasets/README.md.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dptrain/core/fields.hpp"
#include "dptrain/data/chunk_offsets.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/hdf5/handle.hpp"

namespace dptrain::data {

inline constexpr const char* kShardFormat = "dptrain-shard";
inline constexpr int kShardVersion = 2;        // what we write
inline constexpr int kOldestShardVersion = 1;  // what we still read (version 1: vlen JPEG)

struct ShardHeader {
  std::string split;
  std::int64_t shard_index = 0, shard_count = 0;
  std::int64_t first_sample = 0, samples = 0;
  std::int64_t height = 0, width = 0, channels = 0;
  std::string encoding = "raw";
  std::int64_t classes = 0;
  bool operator==(const ShardHeader&) const = default;

  // The root attributes after `format` and `version` (written first, checked before these are read).
  template <class Self, class Visit>
  static void fields(Self& h, Visit&& visit) {
    visit(Field{"split"}, h.split);
    visit(Field{"shard_index"}, h.shard_index);
    visit(Field{"shard_count"}, h.shard_count);
    visit(Field{"first_sample"}, h.first_sample);
    visit(Field{"samples"}, h.samples);
    visit(Field{"height"}, h.height);
    visit(Field{"width"}, h.width);
    visit(Field{"channels"}, h.channels);
    visit(Field{"encoding"}, h.encoding);
    visit(Field{"classes"}, h.classes);
  }
};

// How a raw shard stores its `images`. The converter's layout (contiguous) is the one the loader reads
// without HDF5 at no cost to find; one image per unfiltered chunk (what converters before it wrote) is
// read without HDF5 too, once every chunk is looked up; the others exist so that tests cover the
// fallback.
struct RawShardLayout {
  int images_per_chunk = 0;  // 0: contiguous
  int gzip_level = 0;        // 0: no filter (needs chunks)
};

// Writes a complete shard to `path` (through `path.tmp` and a rename, so a crash never leaves a
// half-written shard under the final name). Raw: `pixels` holds samples*H*W*C bytes.
void write_raw_shard(const std::string& path, const ShardHeader& header, const std::uint8_t* pixels,
                     const std::int32_t* labels, const RawShardLayout& layout = {});
// How a JPEG shard stores its bytes. The converter's layout (packed, contiguous) is the one the loader
// reads with pread, outside the HDF5 lock; the others exist so that tests cover the fallbacks.
struct JpegShardLayout {
  bool vlen = false;    // version 1's layout: one variable-length `jpeg` dataset
  int chunk_bytes = 0;  // packed: 0 = contiguous, else `jpeg_bytes` chunked (read through H5Dread)
  int gzip_level = 0;   // packed and chunked: 0 = no filter
};

void write_jpeg_shard(const std::string& path, const ShardHeader& header,
                      const std::vector<std::vector<std::uint8_t>>& jpegs, const std::int32_t* labels,
                      const JpegShardLayout& layout = {});

// The most bytes one JPEG entry of an H x W x C image may have: 8 x H x W x C + 64 KiB (a JPEG of a
// noisy image at quality 100 is about 1.5 x its pixels; metadata adds kilobytes). A larger entry is
// refused before anything is allocated for it.
std::uint64_t max_jpeg_bytes(const ShardHeader& header);

class SampleFile;

// Where one sample's bytes are, in a file opened for pread: read it with no lock held.
struct DirectRead {
  std::shared_ptr<const SampleFile> file;
  std::uint64_t offset = 0, bytes = 0;
  void read(void* out) const;
};

// Reads one shard after checking every attribute and size against what the manifest says, before
// allocating anything; a mismatch is an Error naming the file and the field.
//
// Shards in the converter's layouts (raw: one image per unfiltered chunk; JPEG: packed, contiguous)
// are read with pread at offsets found when the shard is opened (reads_directly()): the constructor
// then closes the shard's HDF5 ids, and keeps only the offsets, the labels and a descriptor (which
// close_file() gives back and direct_read() reopens). Every other layout reads through H5Dread. Every member function
// but DirectRead::read needs the caller to hold h5::global_mutex() when other threads use HDF5 or the reader.
class ShardReader {
 public:
  ShardReader(const std::string& path, const ShardHeader& expected, std::size_t cache_bytes = 8 << 20);
  ~ShardReader();
  const ShardHeader& header() const { return header_; }
  const std::vector<std::int32_t>& labels() const { return labels_; }
  bool reads_directly() const { return !offsets_.empty(); }
  // How samples are read, for logs and `data verify`: kDirectReadPath, kDirectJpegReadPath or
  // "HDF5 (H5Dread under the lock): <why>".
  const std::string& read_path() const { return read_path_; }
  // Sample i (0-based within the shard) as H*W*C bytes (raw shards).
  void read_image(std::int64_t i, std::uint8_t* out) const;
  // Sample i's place in the file (reads_directly() only), the file opened again if it was closed.
  DirectRead direct_read(std::int64_t i);
  // Closes the descriptor of a direct reader (the samples in flight keep theirs); a later
  // direct_read() opens it again. Nothing for an HDF5 reader.
  void close_file();
  bool file_open() const { return file_ != nullptr || data_.id() >= 0; }
  // Sample i's encoded bytes (jpeg shards).
  std::vector<std::uint8_t> read_jpeg(std::int64_t i) const;
  // The same into `out` (resized; its capacity reused): no allocation once it is large enough.
  void read_jpeg(std::int64_t i, std::vector<std::uint8_t>& out) const;
  const std::string& path() const { return path_; }

 private:
  void read_image_hdf5(std::int64_t i, std::uint8_t* out) const;
  void read_jpeg_hdf5(std::int64_t i, std::vector<std::uint8_t>& out) const;
  void open_jpeg(std::int64_t version);
  void open_direct_path();
  std::uint64_t sample_bytes() const;
  std::uint64_t bytes_of(std::int64_t i) const;  // sample i's stored bytes

  std::string path_;
  h5::Handle file_h5_;  // opened first: the header is read from it (one open, one structure check)
  ShardHeader header_;
  h5::Handle data_;
  // JPEG reads, made once: a small conversion buffer (HDF5 zeroes its default 1 MB on every read),
  // the vlen type, a one-element memory space and the file space whose selection each read moves.
  h5::Handle transfer_, jpeg_type_, jpeg_memory_, jpeg_file_space_;
  std::vector<std::int32_t> labels_;
  std::vector<std::uint64_t> offsets_;      // per sample, where its bytes start (direct readers)
  std::vector<std::uint64_t> jpeg_starts_;  // packed JPEG: N+1 offsets into `jpeg_bytes`
  std::uint64_t file_size_ = 0;             // of the file the offsets were checked against
  std::shared_ptr<const SampleFile> file_;  // direct readers: open descriptor, or null
  std::string read_path_;
};

// The header the manifest promises for shard `shard` of split `split` (what ShardReader checks).
ShardHeader expected_shard_header(const Manifest& manifest, const std::string& split, std::size_t shard);

// The header stored in a shard file, read without validation (for `dptrain data verify`).
ShardHeader read_shard_header(const std::string& path);
// The same from a shard already open (h5::open_file); `path` names it in errors.
ShardHeader read_shard_header(hid_t file, const std::string& path);

}  // namespace dptrain::data
