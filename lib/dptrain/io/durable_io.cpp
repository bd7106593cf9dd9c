#include "dptrain/io/durable_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "dptrain/core/error.hpp"
#include "dptrain/core/file_write.hpp"
#include "dptrain/io/exclusive_file.hpp"

namespace dptrain::io {

void throw_posix_error(const char* call, const std::string& path) { throw_errno_error(call, path); }

void fsync_directory(const std::string& directory) {
  const std::string path = directory.empty() ? std::string(".") : directory;
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw_posix_error("open", path);
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    errno = error;
    throw_posix_error("fsync", path);
  }
  if (::close(fd) != 0) throw_posix_error("close", path);
}

void rename_file(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) throw_posix_error("rename", from + ", " + to);
}

namespace {
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::lstat(a.c_str(), &sa) == 0 && ::lstat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}
}  // namespace

void rename_file_no_replace(const std::string& from, const std::string& to) {
  const auto exists_error = [&] {
    throw Error(detail::concat(to, " already exists: not replacing it (remove it or choose another name)"));
  };
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return;
  if (errno == EEXIST) exists_error();
  // EPERM too: an old seccomp filter or a FUSE file system refuses the call itself; link and rename
  // below report a real permission problem.
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP && errno != EPERM)
    throw_posix_error("renameat2", from + ", " + to);
  // No RENAME_NOREPLACE here (an older kernel or a network file system): a hard link fails on an
  // existing name just as atomically.
  if (::link(from.c_str(), to.c_str()) == 0 || (errno == EEXIST && same_file(from, to))) {
    // (NFS: a retried link may report EEXIST for the link it made; then both names are our file.)
    if (::unlink(from.c_str()) != 0) throw_posix_error("unlink", from);
    return;
  }
  if (errno == EEXIST) exists_error();
  if (errno != EPERM && errno != ENOTSUP && errno != ENOSYS) throw_posix_error("link", from + ", " + to);
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(to, ec))) exists_error();
  rename_file(from, to);
}

void check_new_file(const std::string& path, const std::string& who) {
  std::error_code ec;
  DPTRAIN_CHECK(!std::filesystem::exists(std::filesystem::symlink_status(path, ec)), path, " already exists: ", who,
                " does not overwrite a file; remove it or choose another name");
}

// Short, beside the target: `dir/dptrain-<pid>-<n>.tmp` (a long OUT name plus a suffix could exceed
// NAME_MAX), unique within the process.
std::string temporary_name_for(const std::string& target) {
  static std::atomic<unsigned> next{0};
  const std::filesystem::path parent = std::filesystem::path(target).parent_path();
  const std::string name = "dptrain-" + std::to_string(::getpid()) + "-" + std::to_string(next++) + ".tmp";
  return (parent / name).string();
}

void replace_file_atomically(const std::string& directory, const std::string& name, const std::string& contents) {
  const std::string target = (std::filesystem::path(directory) / name).string();
  ExclusiveFile temporary(target + ".tmp");
  temporary.write(contents);
  temporary.sync();
  temporary.rename_to(target);
  fsync_directory(directory);
}

}  // namespace dptrain::io
