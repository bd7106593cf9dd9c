#pragma once
// A shard file opened a second time, read-only, for pread: many threads may read from one descriptor
// at once (pread has no shared file position), with no HDF5 call and so no HDF5 lock.
#include <cstdint>
#include <string>

namespace dptrain::data {

class SampleFile {
 public:
  explicit SampleFile(const std::string& path);  // an Error naming the path when it cannot be opened
  ~SampleFile();
  SampleFile(const SampleFile&) = delete;
  SampleFile& operator=(const SampleFile&) = delete;

  std::uint64_t size() const { return size_; }
  // Exactly `bytes` bytes from `offset` into `out` (retries short reads and EINTR); an Error naming
  // the path and `what` when the file ends early or the read fails.
  void read(std::uint64_t offset, std::uint64_t bytes, void* out, const char* what) const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace dptrain::data
