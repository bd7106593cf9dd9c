#pragma once
// The lock of a checkpoint directory: one run writes a directory at a time. Two jobs given the same
// --checkpoint-dir (a resubmitted job while the first still runs, a copy-pasted script) would write
// the same ckpt-<step>.h5 names, replace each other's `latest` and prune each other's checkpoints.
//
// The lock is flock(2) on DIR/dptrain.lock, held by rank 0 for the whole run. The kernel (or the
// file system's lock server) releases it when its holder dies, however it dies (SIGKILL at the end
// of a Slurm time limit, a node crash), so a requeued job finds it free and takes it over: a stale
// lock file never blocks a restart. The file holds its holder's host, pid and Slurm job id, which
// the refusal quotes; it is emptied at a clean release, so a non-empty file taken over names a run
// that died holding it. The file is never deleted: a process that opened it just before a deletion
// would lock a file nobody else sees, and two runs would both believe they hold the lock.
#include <string>

namespace dptrain::ckpt {

inline constexpr const char* kLockName = "dptrain.lock";

// "host node07, pid 4242, Slurm job 1234 (started 2024-05-01T12:00:00Z)"; "not under Slurm" without
// SLURM_JOB_ID.
std::string describe_this_process();

class DirectoryLock {
 public:
  // Takes the lock of `directory` (which must exist) without waiting. Throws when another process
  // holds it, naming it; the lock file is opened with O_NOFOLLOW, so a symlink planted at its name is
  // an error and is never followed. Where the file system does not support flock (Lustre mounted
  // without -o flock, NFS without a lock manager) the run goes on unlocked: exclusive() is false and
  // unsupported() says why, for a warning.
  explicit DirectoryLock(const std::string& directory);
  // Empties the file and releases the lock.
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

  const std::string& path() const { return path_; }
  // What the file said when we took the lock: empty after a clean release; otherwise the holder that
  // died without releasing it (a requeued job finds its own previous run here).
  const std::string& previous_holder() const { return previous_holder_; }
  bool exclusive() const { return unsupported_.empty(); }
  const std::string& unsupported() const { return unsupported_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::string previous_holder_;
  std::string unsupported_;
};

}  // namespace dptrain::ckpt
