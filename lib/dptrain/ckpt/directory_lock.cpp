#include "dptrain/ckpt/directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "dptrain/core/error.hpp"
#include "dptrain/core/exit_codes.hpp"
#include "dptrain/io/durable_io.hpp"

namespace dptrain::ckpt {
namespace {
// The holder's line as it can be quoted in one error line: printable, trimmed, bounded.
std::string quotable(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (out.size() >= 300) break;
    out += std::isprint(static_cast<unsigned char>(c)) ? c : ' ';
  }
  const auto first = out.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return out.substr(first, out.find_last_not_of(' ') - first + 1);
}

std::string read_all(int fd, const std::string& path) {
  std::string text;
  char buffer[1024];
  for (off_t offset = 0; text.size() < 4096;) {
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) io::throw_posix_error("pread", path);
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    offset += n;
  }
  return text;
}

void write_holder(int fd, const std::string& path) {
  if (::ftruncate(fd, 0) != 0) io::throw_posix_error("ftruncate", path);
  const std::string line = describe_this_process() + "\n";
  std::size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::pwrite(fd, line.data() + written, line.size() - written, static_cast<off_t>(written));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) io::throw_posix_error("pwrite", path);
    written += static_cast<std::size_t>(n);
  }
  // Not fsynced: the line only informs; the exclusion is the flock, which no crash can leave behind.
}
}  // namespace

std::string describe_this_process() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
  const char* job = std::getenv("SLURM_JOB_ID");
  const char* restart = std::getenv("SLURM_RESTART_COUNT");
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  char since[32] = "unknown time";
  if (::gmtime_r(&now, &utc) != nullptr) std::strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return detail::concat("host ", host, ", pid ", ::getpid(), ", ",
                        job && *job ? detail::concat("Slurm job ", job) : std::string("not under Slurm"),
                        restart && *restart ? detail::concat(" (restart ", restart, ")") : std::string(), ", started ",
                        since);
}

DirectoryLock::DirectoryLock(const std::string& directory)
    : path_((std::filesystem::path(directory) / kLockName).string()) {
  do {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) {
    const int error = errno;
    DPTRAIN_CHECK(error != ELOOP, path_,
                  " is a symbolic link: dptrain never follows one in a checkpoint directory; remove it (and "
                  "check who put it there)");
    throw OptionError(
        exit_code::option_value,
        detail::concat("the checkpoint directory ", directory, " is not writable: cannot create its lock file ", path_,
                       " (", std::strerror(error), "); fix the permissions or give another --checkpoint-dir"));
  }
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) io::throw_posix_error("fstat", path_);
    DPTRAIN_CHECK(S_ISREG(st.st_mode), path_, " is not a regular file; remove it");
    int rc = 0;
    do {
      rc = ::flock(fd_, LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0 && errno == EWOULDBLOCK) {
      const std::string holder = quotable(read_all(fd_, path_));
      throw Error(detail::concat(
          "the checkpoint directory ", directory, " is in use by another run (",
          holder.empty() ? std::string("which has not written its name yet") : holder, ", holding ", path_,
          "): two runs writing one directory would overwrite each other's checkpoints; wait for it to end or "
          "cancel it, or give this run another --checkpoint-dir"));
    }
    if (rc != 0 && (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS)) {
      unsupported_ = detail::concat("flock(", path_, ") failed: ", std::strerror(errno));
    } else if (rc != 0) {
      io::throw_posix_error("flock", path_);
    }
    previous_holder_ = quotable(read_all(fd_, path_));
    write_holder(fd_, path_);
  } catch (...) {
    ::close(fd_);  // releases the lock if we took it
    throw;
  }
}

DirectoryLock::~DirectoryLock() {
  // Emptied while still held, so the next run can tell a clean end from a death. Best effort: a
  // destructor cannot report, and a line left behind only makes the next run say it took over.
  if (exclusive()) {
    const int truncated = ::ftruncate(fd_, 0);
    (void)truncated;
  }
  ::close(fd_);
}

}  // namespace dptrain::ckpt
