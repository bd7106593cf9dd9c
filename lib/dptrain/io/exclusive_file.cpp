#include "dptrain/io/exclusive_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "dptrain/core/error.hpp"
#include "dptrain/core/file_write.hpp"
#include "dptrain/io/durable_io.hpp"

namespace dptrain::io {
namespace {
int open_exclusive(const std::string& path) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

const char* kind_of(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "a device";
}
}  // namespace

ExclusiveFile::ExclusiveFile(std::string path) : path_(std::move(path)) {
  fd_ = open_exclusive(path_);
  if (fd_ < 0 && errno == EEXIST) {
    struct stat st {};
    if (::lstat(path_.c_str(), &st) != 0) throw_posix_error("lstat", path_);
    DPTRAIN_CHECK(S_ISREG(st.st_mode), path_, " is ", kind_of(st.st_mode),
                  ", not a temporary file dptrain wrote: dptrain never writes through it or removes it; "
                  "remove it yourself (and check who put it there)");
    if (::unlink(path_.c_str()) != 0 && errno != ENOENT) throw_posix_error("unlink", path_);
    fd_ = open_exclusive(path_);  // a second EEXIST: someone else is creating it right now
  }
  if (fd_ < 0) throw_posix_error("open(O_CREAT|O_EXCL|O_NOFOLLOW)", path_);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int error = errno;
    ::close(fd_);
    errno = error;
    throw_posix_error("fstat", path_);
  }
  device_ = st.st_dev;
  inode_ = st.st_ino;
}

ExclusiveFile::~ExclusiveFile() {
  if (fd_ >= 0) ::close(fd_);
  // Best effort, and never someone else's file: a destructor cannot report, and the next write of
  // this name removes a leftover regular file anyway.
  if (!renamed_ && still_named()) ::unlink(path_.c_str());
}

std::string ExclusiveFile::reopen_path() const {
  DPTRAIN_CHECK(fd_ >= 0, path_, ": the temporary file is already closed");
  const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
  // stat follows the magic link to the inode the descriptor holds; without /proc (or on a kernel
  // that does not resolve it) the name itself is used and rename_to() still refuses a swapped name.
  struct stat st {};
  if (::stat(proc.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_) return proc;
  return path_;
}

void ExclusiveFile::write(std::string_view bytes) { write_all(fd_, bytes, path_); }

void ExclusiveFile::sync() {
  if (::fsync(fd_) != 0) throw_posix_error("fsync", path_);
}

void ExclusiveFile::close_for_rename(const std::string& target) {
  DPTRAIN_CHECK(still_named(), path_,
                " no longer names the file dptrain wrote (it was replaced while being written): "
                "not renaming it to ",
                target);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw_posix_error("close", path_);  // NFS reports a failed write-back here
}

void ExclusiveFile::rename_to(const std::string& target) {
  close_for_rename(target);
  rename_file(path_, target);
  renamed_ = true;
}

void ExclusiveFile::rename_to_new(const std::string& target) {
  close_for_rename(target);
  rename_file_no_replace(path_, target);
  renamed_ = true;
}

bool ExclusiveFile::still_named() const {
  struct stat st {};
  return ::lstat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == device_ && st.st_ino == inode_;
}

}  // namespace dptrain::io
