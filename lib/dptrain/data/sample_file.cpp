#include "dptrain/data/sample_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dptrain/core/error.hpp"

namespace dptrain::data {

SampleFile::SampleFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  DPTRAIN_CHECK(fd_ >= 0, path, ": cannot open the shard for reading (", std::strerror(errno), ")");
  struct stat status {};
  if (::fstat(fd_, &status) != 0) {
    const int error = errno;
    ::close(fd_);
    throw Error(detail::concat(path, ": cannot read the shard's size (", std::strerror(error), ")"));
  }
  size_ = static_cast<std::uint64_t>(status.st_size);
}

SampleFile::~SampleFile() {
  if (fd_ >= 0) ::close(fd_);  // read-only: nothing is lost if close fails
}

void SampleFile::read(std::uint64_t offset, std::uint64_t bytes, void* out, const char* what) const {
  auto* cursor = static_cast<char*>(out);
  while (bytes > 0) {
    const ssize_t got = ::pread(fd_, cursor, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    DPTRAIN_CHECK(got >= 0, path_, ": reading ", what, " failed (", std::strerror(errno), ")");
    DPTRAIN_CHECK(got > 0, path_, ": the file ends before ", what, " (truncated after it was opened?)");
    cursor += got;
    offset += static_cast<std::uint64_t>(got);
    bytes -= static_cast<std::uint64_t>(got);
  }
}

}  // namespace dptrain::data
