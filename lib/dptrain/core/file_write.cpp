#include "dptrain/core/file_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "dptrain/core/error.hpp"

namespace dptrain {

void throw_errno_error(const char* call, const std::string& path) {
  throw Error(detail::concat(call, "(", path, ") failed: ", std::strerror(errno)));
}

void write_all(int fd, std::string_view bytes, const std::string& path) {
  // Under a file-size limit (ulimit -f) the write that crosses it raises SIGXFSZ, which kills the
  // process with a half-written temporary behind; ignored, the write fails with EFBIG and is named.
  // Set here, at every write, since an MPI start-up may have restored the default after main's.
  if (std::signal(SIGXFSZ, SIG_IGN) == SIG_ERR) throw_errno_error("signal(SIGXFSZ)", path);
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno_error("write", path);
    written += static_cast<std::size_t>(n);
  }
}

void write_file_through_temporary(const std::string& temporary, const std::string& path, std::string_view bytes) {
  struct stat st {};
  // The leftover of a writer that was killed: a regular file only (unlink never follows a link).
  if (::lstat(temporary.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::unlink(temporary.c_str()) != 0) {
    throw_errno_error("unlink", temporary);
  }
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw_errno_error("open", temporary);
  bool open = true;
  try {
    write_all(fd, bytes, temporary);
    if (::fsync(fd) != 0) throw_errno_error("fsync", temporary);
    open = false;
    if (::close(fd) != 0) throw_errno_error("close", temporary);  // NFS reports a failed write-back here
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
      const int error = errno;
      throw Error(detail::concat("rename(", temporary, ", ", path, ") failed: ", std::strerror(error)));
    }
  } catch (...) {
    if (open) ::close(fd);
    ::unlink(temporary.c_str());  // best effort: the error being thrown is the one to report
    throw;
  }
}

namespace {
// Creates and removes a file in `directory`, or says why it cannot ("" when it can).
std::string probe_directory(const std::filesystem::path& directory) {
  char host[256] = "host";
  ::gethostname(host, sizeof host - 1);
  const std::filesystem::path probe =
      directory / (".dptrain-probe-" + std::string(host) + "-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}
}  // namespace

void check_output_file(const std::string& path) {
  DPTRAIN_CHECK(!path.empty(), "an output file needs a name");
  std::error_code ec;
  DPTRAIN_CHECK(!std::filesystem::is_directory(path, ec), path, ": is a directory; give a file name");
  std::filesystem::path directory = std::filesystem::path(path).parent_path();
  if (directory.empty()) directory = ".";
  DPTRAIN_CHECK(std::filesystem::is_directory(directory, ec), path, ": its directory ", directory.string(),
                " does not exist");
  const std::string cause = probe_directory(directory);
  DPTRAIN_CHECK(cause.empty(), path, ": cannot write a file in ", directory.string(), " (", cause,
                "); give a path this job can write");
}

void check_output_directory(const std::string& directory) {
  DPTRAIN_CHECK(!directory.empty(), "an output directory needs a name");
  std::error_code ec;
  std::filesystem::path existing = std::filesystem::absolute(directory, ec);
  DPTRAIN_CHECK(!ec, directory, ": ", ec.message());
  while (!std::filesystem::exists(existing, ec) && existing.has_parent_path() && existing != existing.parent_path()) {
    existing = existing.parent_path();
  }
  DPTRAIN_CHECK(std::filesystem::is_directory(existing, ec), directory, ": ",
                existing.string() == std::filesystem::absolute(directory).string()
                    ? "is not a directory"
                    : existing.string() + " is not a directory");
  const std::string cause = probe_directory(existing);
  DPTRAIN_CHECK(cause.empty(), directory, ": cannot write a file in ", existing.string(), " (", cause,
                "); give a directory this job can write");
}

}  // namespace dptrain
