#pragma once
// The safetensors format (Hugging Face's, what PyTorch users exchange weights in), written and read
// exactly as published: 8 bytes of little-endian header length N, N bytes of a JSON object
// (`{"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ..., "__metadata__":
// {string: string}}`, padded with spaces), then the tensors' bytes, little-endian and row-major, with
// offsets relative to the end of the header. A reader refuses anything the format forbids: a header
// that is not such an object, a duplicate or empty name, an unknown dtype, a shape whose size is not
// its byte range, overlapping ranges or bytes no tensor owns.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dptrain/core/tensor.hpp"

namespace dptrain::interop {

struct StoredTensor {
  std::string name;
  std::string dtype;  // the format's names: "F32", "F64", "F16", "BF16", "I64", ...
  std::vector<std::int64_t> shape;
  std::string_view bytes;  // into the file's buffer (read) or the tensor given to add() (write)
};

class ByteSource;  // where a file's bytes come from (safetensors.cpp)

class SafetensorsFile {
 public:
  // Adds a host f32 tensor in plain layout; the file keeps a reference to it until written.
  void add(std::string name, const Tensor& value);
  // Adds a tensor of another dtype from its little-endian bytes (copied).
  void add_bytes(std::string name, std::string dtype, std::vector<std::int64_t> shape, std::string bytes);

  const std::vector<StoredTensor>& tensors() const { return tensors_; }
  const StoredTensor* find(const std::string& name) const;
  std::map<std::string, std::string> metadata;

  // Writes the file atomically: a temporary beside `path` (created exclusively), fsynced, renamed.
  // An existing `path` is an error, never replaced (an export must not overwrite its own checkpoint).
  void write(const std::string& path) const;
  // Reads and validates a file: its header first (bounded by its stated length and the file's size),
  // then each tensor's byte range; every error names the path and, where there is one, the tensor.
  static SafetensorsFile read(const std::string& path);
  // The same from bytes in memory (`where` names them in errors).
  static SafetensorsFile parse(std::string bytes, const std::string& where);

 private:
  static SafetensorsFile from_source(ByteSource& source, const std::string& where);

  std::vector<StoredTensor> tensors_;
  std::vector<std::shared_ptr<const void>> owners_;  // what the tensors' bytes point into
};

// Bytes per element of a dtype the format defines; 0 for a name it does not.
std::size_t safetensors_dtype_size(std::string_view dtype);

// A stored floating-point tensor (F32, F64, F16 or BF16) as a host f32 tensor; any other dtype is an
// error naming the tensor and `where`.
Tensor to_f32(const StoredTensor& t, const std::string& where);

}  // namespace dptrain::interop
