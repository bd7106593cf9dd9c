#pragma once
// A checkpoint directory: `ckpt-<step>.h5` files (the step zero-padded to 9 digits, so names sort like
// steps), `latest` (a text file naming the newest complete checkpoint) and, after a killed writer,
// stray `*.tmp` files. Why `latest` is a file and not a symlink: rename(2) of a regular file is atomic
// on every POSIX file system (Lustre, GPFS and NFS included), while symlinks are not preserved by
// every copy tool, object-store tier or SMB export a checkpoint directory may travel through; a file
// holding a bare name also stays valid when the directory is moved or copied elsewhere.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dptrain/ckpt/training_state.hpp"

namespace dptrain::ckpt {

inline constexpr const char* kLatestName = "latest";

// "ckpt-000000500.h5"
std::string checkpoint_file_name(std::int64_t step);
// The step of a "ckpt-<digits>.h5" name, or nullopt for any other name.
std::optional<std::int64_t> checkpoint_step(const std::string& file_name);

struct CheckpointEntry {
  std::int64_t step;
  std::string path;
};
// The ckpt-*.h5 files of `directory`, oldest (lowest step) first; none when it does not exist.
std::vector<CheckpointEntry> list_checkpoints(const std::string& directory);

// The file name `latest` holds (whitespace trimmed), or nullopt when there is no `latest`. Throws
// when it names something outside the directory.
std::optional<std::string> read_latest(const std::string& directory);

// Deletes all but the `keep` newest checkpoints (never the one `latest` names) and the `*.tmp` files a
// killed writer left. keep == 0 keeps every checkpoint. Returns the paths deleted. Call it only between
// writes: it would delete the temporary file of a write in progress.
std::vector<std::string> prune_checkpoints(const std::string& directory, int keep);

// The checkpoint a run given `--resume auto` continues from: the one `latest` names, or, when that
// one is missing, truncated, corrupt or unreadable, the newest other ckpt-*.h5 that reads and
// validates. Each skipped file adds a warning (path and reason) to `warnings`. nullopt: a fresh start.
struct ResumePoint {
  std::string path;
  TrainingState state;  // already read and validated
};
std::optional<ResumePoint> find_resume_checkpoint(const std::string& directory, std::vector<std::string>& warnings);
// The same, printing each warning to stderr as "dptrain: warning: ...".
std::optional<ResumePoint> find_resume_checkpoint(const std::string& directory);

// A checkpoint path given by the user: a file as is, a directory by the file `latest` names (or its
// newest ckpt-*.h5 when it has no `latest`). Throws when a directory holds no checkpoint.
std::string resolve_checkpoint_path(const std::string& file_or_directory);

}  // namespace dptrain::ckpt
