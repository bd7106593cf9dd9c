#include "dptrain/interop/safetensors.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "dptrain/core/error.hpp"
#include "dptrain/core/json_line.hpp"
#include "dptrain/io/durable_io.hpp"
#include "dptrain/io/exclusive_file.hpp"

namespace dptrain::interop {
namespace {
static_assert(std::endian::native == std::endian::little, "safetensors stores little-endian bytes");

constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit
constexpr const char* kMetadataKey = "__metadata__";

struct Entry {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
};

std::uint64_t element_count(const std::vector<std::int64_t>& shape, const std::string& where) {
  std::uint64_t n = 1;
  for (const std::int64_t d : shape) {
    DPTRAIN_CHECK(d >= 0, where, ": a negative dimension");
    const auto u = static_cast<std::uint64_t>(d);
    DPTRAIN_CHECK(u == 0 || n <= std::numeric_limits<std::uint64_t>::max() / u, where, ": the shape overflows");
    n *= u;
  }
  return n;
}

std::uint64_t offset_of(const nlohmann::json& v, const std::string& where) {
  DPTRAIN_CHECK(v.is_number_unsigned(), where, ": data_offsets must be two non-negative integers");
  return v.get<std::uint64_t>();
}

Entry parse_entry(const std::string& name, const nlohmann::json& v, const std::string& where) {
  const std::string at = where + ": tensor '" + name + "'";
  DPTRAIN_CHECK(v.is_object(), at, " is not an object with dtype, shape and data_offsets");
  DPTRAIN_CHECK(v.size() == 3 && v.contains("dtype") && v.contains("shape") && v.contains("data_offsets"), at,
                " must have exactly the keys dtype, shape and data_offsets");
  Entry e;
  e.name = name;
  DPTRAIN_CHECK(v["dtype"].is_string(), at, ": dtype is not a string");
  e.dtype = v["dtype"].get<std::string>();
  const std::size_t item = safetensors_dtype_size(e.dtype);
  DPTRAIN_CHECK(item > 0, at, ": unknown dtype '", e.dtype, "'");
  DPTRAIN_CHECK(v["shape"].is_array(), at, ": shape is not an array");
  for (const auto& d : v["shape"]) {
    DPTRAIN_CHECK(d.is_number_unsigned() && d.get<std::uint64_t>() <= std::numeric_limits<std::int64_t>::max(), at,
                  ": shape must hold non-negative integers");
    e.shape.push_back(d.get<std::int64_t>());
  }
  const auto& offsets = v["data_offsets"];
  DPTRAIN_CHECK(offsets.is_array() && offsets.size() == 2, at, ": data_offsets must be [begin, end]");
  e.begin = offset_of(offsets[0], at);
  e.end = offset_of(offsets[1], at);
  DPTRAIN_CHECK(e.begin <= e.end, at, ": data_offsets [", e.begin, ", ", e.end, "] end before they begin");
  const std::uint64_t count = element_count(e.shape, at);
  DPTRAIN_CHECK(count <= std::numeric_limits<std::uint64_t>::max() / item && count * item == e.end - e.begin, at,
                " has ", e.end - e.begin, " bytes, but its shape and dtype ", e.dtype, " need ", count, " x ", item);
  return e;
}

// nlohmann keeps the last of two equal keys; the format forbids them, so the parse rejects them. A
// valid header nests three deep (header, tensor, shape); anything deeper is refused as it is read,
// since a parse tree of deeply nested containers costs many times the header's bytes.
constexpr int kMaxHeaderDepth = 3;

nlohmann::json parse_header(std::string_view text, const std::string& where) {
  // nlohmann reads a NUL as the end of the input and would take the text before it for the header.
  DPTRAIN_CHECK(text.find('\0') == std::string_view::npos, where, ": the header holds a NUL byte at ", text.find('\0'),
                " of its ", text.size());
  std::vector<std::set<std::string>> keys_at_depth;
  std::string duplicate;
  const nlohmann::json::parser_callback_t refuse_duplicates = [&](int depth, nlohmann::json::parse_event_t event,
                                                                  nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (depth > kMaxHeaderDepth) {
      throw Error(detail::concat(where, ": the header nests deeper than a safetensors header (", kMaxHeaderDepth,
                                 " levels: header, tensor, shape)"));
    }
    if (event == Event::object_start) {
      if (static_cast<int>(keys_at_depth.size()) <= depth) keys_at_depth.resize(static_cast<std::size_t>(depth) + 1);
      keys_at_depth[static_cast<std::size_t>(depth)].clear();
    } else if (event == Event::key && depth >= 1) {
      auto& seen = keys_at_depth[static_cast<std::size_t>(depth) - 1];
      if (!seen.insert(parsed.get<std::string>()).second && duplicate.empty()) duplicate = parsed.get<std::string>();
    }
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text.begin(), text.end(), refuse_duplicates);
  } catch (const nlohmann::json::exception& e) {
    throw Error(detail::concat(where, ": the header is not valid JSON (", e.what(), ")"));
  }
  DPTRAIN_CHECK(duplicate.empty(), where, ": the header names '", duplicate, "' twice");
  DPTRAIN_CHECK(header.is_object(), where, ": the header is not a JSON object");
  return header;
}

std::uint16_t load_u16(const char* p) {
  std::uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // infinity or NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise it
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}
}  // namespace

std::size_t safetensors_dtype_size(std::string_view dtype) {
  if (dtype == "BOOL" || dtype == "U8" || dtype == "I8" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  return 0;
}

void SafetensorsFile::add(std::string name, const Tensor& value) {
  DPTRAIN_CHECK(value.dtype() == DType::f32 && value.device().is_cpu() && value.layout() == Layout::plain,
                "safetensors: tensor ", name, " is not a plain f32 host tensor");
  auto owner = std::make_shared<Tensor>(value);
  tensors_.push_back({std::move(name), "F32", value.shape().dims(),
                      std::string_view(static_cast<const char*>(owner->raw()), owner->bytes())});
  owners_.push_back(std::move(owner));
}

void SafetensorsFile::add_bytes(std::string name, std::string dtype, std::vector<std::int64_t> shape,
                                std::string bytes) {
  const std::size_t item = safetensors_dtype_size(dtype);
  DPTRAIN_CHECK(item > 0 && element_count(shape, name) * item == bytes.size(), "safetensors: tensor ", name, " has ",
                bytes.size(), " bytes, not what its dtype ", dtype, " and shape need");
  auto owner = std::make_shared<std::string>(std::move(bytes));
  tensors_.push_back({std::move(name), std::move(dtype), std::move(shape), std::string_view(*owner)});
  owners_.push_back(std::move(owner));
}

const StoredTensor* SafetensorsFile::find(const std::string& name) const {
  const auto it = std::find_if(tensors_.begin(), tensors_.end(), [&](const StoredTensor& t) { return t.name == name; });
  return it == tensors_.end() ? nullptr : &*it;
}

void SafetensorsFile::write(const std::string& path) const {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  std::uint64_t offset = 0;
  std::set<std::string> names;
  for (const StoredTensor& t : tensors_) {
    DPTRAIN_CHECK(!t.name.empty() && t.name != kMetadataKey && names.insert(t.name).second, path,
                  ": cannot write tensor name '", t.name, "' (empty, reserved or given twice)");
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  // Metadata from elsewhere (a path, a class name) may not be UTF-8: such bytes become U+FFFD
  // instead of failing the write after the work is done.
  std::string text = json_text(header);
  text.append((8 - text.size() % 8) % 8, ' ');  // the tensors start 8-byte aligned
  const std::uint64_t length = text.size();
  char prefix[8];
  std::memcpy(prefix, &length, sizeof prefix);

  namespace fs = std::filesystem;
  const fs::path target(path);
  io::ExclusiveFile temporary(io::temporary_name_for(path));
  temporary.write(std::string_view(prefix, sizeof prefix));
  temporary.write(text);
  for (const StoredTensor& t : tensors_) temporary.write(t.bytes);
  temporary.sync();
  temporary.rename_to_new(path);
  io::fsync_directory(target.has_parent_path() ? target.parent_path().string() : ".");
}

// Where a file's bytes come from, by range: a file on disk (read only where its header points) or a
// buffer in memory. Each range is a string of its own, so a tensor's bytes are allocated only once
// the header has been checked against the file's size.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::uint64_t size() const = 0;
  virtual std::string read(std::uint64_t offset, std::uint64_t count, const std::string& what) = 0;
};

namespace {

class FileBytes final : public ByteSource {
 public:
  FileBytes(const std::string& path, std::uint64_t size) : path_(path), size_(size), in_(path, std::ios::binary) {
    DPTRAIN_CHECK(in_.good(), "cannot open ", path, ": ", std::strerror(errno));
  }
  std::uint64_t size() const override { return size_; }
  std::string read(std::uint64_t offset, std::uint64_t count, const std::string& what) override {
    // More than the machine's memory is refused before it is allocated (a sparse file may claim
    // terabytes), and an allocation that fails anyway is named too, not "std::bad_alloc".
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    const std::uint64_t memory =
        pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
    DPTRAIN_CHECK(memory == 0 || count <= memory, path_, ": ", what, " takes ", count,
                  " bytes, more than this machine's memory (", memory, " bytes)");
    std::string bytes;
    try {
      bytes.resize(static_cast<std::size_t>(count));
    } catch (const std::bad_alloc&) {
      throw Error(detail::concat(path_, ": ", what, " takes ", count, " bytes, more than this process can allocate"));
    }
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(bytes.data(), static_cast<std::streamsize>(count));
    DPTRAIN_CHECK(in_.gcount() == static_cast<std::streamsize>(count), "reading ", what, " of ", path_,
                  " failed after ", in_.gcount(), " of its ", count, " bytes (did the file shrink while being read?)");
    return bytes;
  }

 private:
  std::string path_;
  std::uint64_t size_;
  std::ifstream in_;
};

class BufferBytes final : public ByteSource {
 public:
  explicit BufferBytes(std::string bytes) : bytes_(std::move(bytes)) {}
  std::uint64_t size() const override { return bytes_.size(); }
  std::string read(std::uint64_t offset, std::uint64_t count, const std::string&) override {
    return bytes_.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(count));
  }

 private:
  std::string bytes_;
};
}  // namespace

SafetensorsFile SafetensorsFile::read(const std::string& path) {
  // A regular file, read by its size: a directory, a FIFO or a device (/dev/zero) is refused, not read
  // without end.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  DPTRAIN_CHECK(!ec, "cannot open ", path, ": ", ec.message());
  DPTRAIN_CHECK(std::filesystem::is_regular_file(status), path, " is not a regular file");
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  DPTRAIN_CHECK(!ec, "cannot read the size of ", path, ": ", ec.message());
  FileBytes source(path, size);
  return from_source(source, path);
}

SafetensorsFile SafetensorsFile::parse(std::string bytes, const std::string& where) {
  BufferBytes source(std::move(bytes));
  return from_source(source, where);
}

// The header first (its length checked against the file's size before it is read), every entry
// checked against the data's size, then each tensor's own byte range.
SafetensorsFile SafetensorsFile::from_source(ByteSource& source, const std::string& where) {
  const std::uint64_t size = source.size();
  DPTRAIN_CHECK(size >= 8, where, ": ", size, " bytes, too short for a safetensors file");
  std::uint64_t length = 0;
  const std::string prefix = source.read(0, 8, "the header length");
  std::memcpy(&length, prefix.data(), sizeof length);
  DPTRAIN_CHECK(length <= kMaxHeaderBytes && length <= size - 8, where, ": the header length ", length,
                " does not fit in the file's ", size, " bytes (is it a safetensors file?)");
  const std::string text = source.read(8, length, "the header");
  DPTRAIN_CHECK(!text.empty() && text.front() == '{', where, ": the header does not start with '{'");
  const nlohmann::json header = parse_header(text, where);

  SafetensorsFile file;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      DPTRAIN_CHECK(value.is_object(), where, ": __metadata__ is not an object");
      for (const auto& [k, v] : value.items()) {
        DPTRAIN_CHECK(v.is_string(), where, ": __metadata__ entry '", k, "' is not a string");
        file.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    DPTRAIN_CHECK(!key.empty(), where, ": a tensor has an empty name");
    entries.push_back(parse_entry(key, value, where));
  }
  // Every byte after the header belongs to exactly one tensor: sorted by offset, each begins where the
  // one before it ends, and the last ends at the end of the file.
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  const std::uint64_t data_bytes = size - 8 - length;
  std::uint64_t expected = 0;
  for (const Entry& e : entries) {
    DPTRAIN_CHECK(e.begin == expected, where, ": tensor '", e.name, "' begins at byte ", e.begin, " of the data, not ",
                  expected, " (the ranges overlap or leave a gap)");
    expected = e.end;
  }
  DPTRAIN_CHECK(expected == data_bytes, where, ": the tensors cover ", expected, " bytes of data, but the file has ",
                data_bytes, " after its header");

  for (Entry& e : entries) {
    auto owner =
        std::make_shared<std::string>(source.read(8 + length + e.begin, e.end - e.begin, "tensor '" + e.name + "'"));
    file.tensors_.push_back({std::move(e.name), std::move(e.dtype), std::move(e.shape), std::string_view(*owner)});
    file.owners_.push_back(std::move(owner));
  }
  return file;
}

Tensor to_f32(const StoredTensor& t, const std::string& where) {
  const std::size_t item = safetensors_dtype_size(t.dtype);
  DPTRAIN_CHECK(item == 0 || element_count(t.shape, t.name) * item == t.bytes.size(), where, ": tensor '", t.name,
                "' has ", t.bytes.size(), " bytes, not what its shape and dtype ", t.dtype, " need");
  Tensor out = Tensor::empty(Shape(t.shape));
  float* dst = out.data<float>();
  const char* src = t.bytes.data();
  const auto n = static_cast<std::size_t>(out.numel());
  if (t.dtype == "F32") {
    std::memcpy(dst, src, n * sizeof(float));
  } else if (t.dtype == "F64") {
    for (std::size_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, src + i * sizeof v, sizeof v);
      dst[i] = static_cast<float>(v);
    }
  } else if (t.dtype == "BF16") {
    for (std::size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(std::uint32_t{load_u16(src + 2 * i)} << 16);
  } else if (t.dtype == "F16") {
    for (std::size_t i = 0; i < n; ++i) dst[i] = half_to_float(load_u16(src + 2 * i));
  } else {
    throw Error(detail::concat(where, ": tensor '", t.name, "' has dtype ", t.dtype,
                               ", not a floating-point type (F32, F64, F16 or BF16)"));
  }
  return out;
}

}  // namespace dptrain::interop
