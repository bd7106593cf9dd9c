#include "dptrain/ckpt/durable_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "dptrain/core/error.hpp"

namespace dptrain::ckpt {
namespace {
[[noreturn]] void throw_posix(const char* call, const std::string& path) {
  throw Error(detail::concat(call, "(", path, ") failed: ", std::strerror(errno)));
}

// A descriptor closed on every path; close() errors are reported where they matter (after writing).
class Descriptor {
 public:
  Descriptor(const std::string& path, int flags, mode_t mode = 0) : path_(path) {
    do {
      fd_ = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) throw_posix("open", path);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }
  void sync() {
    if (::fsync(fd_) != 0) throw_posix("fsync", path_);
  }
  void close() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw_posix("close", path_);
  }

 private:
  std::string path_;
  int fd_ = -1;
};
}  // namespace

void fsync_file(const std::string& path) {
  Descriptor file(path, O_RDONLY);
  file.sync();
  file.close();
}

void fsync_directory(const std::string& directory) {
  Descriptor dir(directory.empty() ? std::string(".") : directory, O_RDONLY | O_DIRECTORY);
  dir.sync();
  dir.close();
}

void rename_file(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) throw_posix("rename", from + ", " + to);
}

void replace_file_atomically(const std::string& directory, const std::string& name, const std::string& contents) {
  const std::string target = (std::filesystem::path(directory) / name).string();
  const std::string temporary = target + ".tmp";
  {
    Descriptor file(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::size_t written = 0;
    while (written < contents.size()) {
      const ssize_t n = ::write(file.fd(), contents.data() + written, contents.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw_posix("write", temporary);
      written += static_cast<std::size_t>(n);
    }
    file.sync();
    file.close();
  }
  rename_file(temporary, target);
  fsync_directory(directory);
}

}  // namespace dptrain::ckpt
