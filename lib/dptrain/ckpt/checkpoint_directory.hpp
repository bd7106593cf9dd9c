#pragma once
// A checkpoint directory: `ckpt-<step>.h5` files (the step zero-padded to 9 digits, so names sort like
// steps), `latest` (a text file naming the newest complete checkpoint), `dptrain.lock` (held by the
// run writing it: directory_lock.hpp) and, after a killed writer, stray `ckpt-<step>.h5.tmp` and
// `latest.tmp` files. Nothing else in it is dptrain's, and dptrain never deletes anything else. Why `latest` is a file
// and not a symlink: rename(2) of a regular file is atomic on every POSIX file system (Lustre, GPFS and NFS included),
// while symlinks are not preserved by every copy tool, object-store tier or SMB export a checkpoint directory may
// travel through; a file holding a bare name also stays valid when the directory is moved or copied elsewhere.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dptrain/ckpt/training_state.hpp"

namespace dptrain::ckpt {

inline constexpr const char* kLatestName = "latest";
// Created, written, fsynced and removed at start: the directory takes new files (write_check).
inline constexpr const char* kWriteCheckName = "dptrain-write-check.tmp";

// "ckpt-000000500.h5"
std::string checkpoint_file_name(std::int64_t step);
// The step of a name exactly as checkpoint_file_name writes it, or nullopt for any other name
// ("ckpt-5.h5" and "ckpt-0000000005.h5" are not dptrain's).
std::optional<std::int64_t> checkpoint_step(const std::string& file_name);
// Whether `file_name` is one of the temporary names dptrain writes: ckpt-<step>.h5.tmp, latest.tmp,
// dptrain-write-check.tmp.
bool is_temporary_name(const std::string& file_name);

struct CheckpointEntry {
  std::int64_t step;
  std::string path;
};
// The entries of `directory` named like checkpoints (checkpoint_step), oldest (lowest step) first,
// whatever they are (a symlink to a checkpoint is read through); none when the directory does not
// exist. Throws when it cannot be listed.
std::vector<CheckpointEntry> list_checkpoints(const std::string& directory);

// The file name `latest` holds (whitespace trimmed), or nullopt when there is no `latest`. Throws
// when it names something outside the directory, or cannot be read.
std::optional<std::string> read_latest(const std::string& directory);

// Deletes all but the `keep` newest checkpoints (never the one `latest` names) and the temporary
// files a killed writer left. Only regular files with exactly the names dptrain writes are deleted
// or counted: a symlink, a directory or `ckpt-5.h5` is never touched. keep == 0 keeps every
// checkpoint. Returns the paths deleted. Call it only between writes: it would delete the temporary
// file of a write in progress.
std::vector<std::string> prune_checkpoints(const std::string& directory, int keep);

// At the start of a run that holds the directory's lock: deletes the temporary files (regular files
// with dptrain's temporary names) that a killed writer left, and returns their paths. Anything else
// at a temporary name (a symlink, a directory) is an error naming it: dptrain did not make it and
// will not write through it or delete it.
std::vector<std::string> remove_stale_temporaries(const std::string& directory);

// Creates, writes, fsyncs and deletes DIR/dptrain-write-check.tmp: a run finds out at its start, not
// at its first checkpoint hours later, that it cannot write there. Throws naming the directory.
void write_check(const std::string& directory);

// The checkpoint a run given `--resume auto` continues from: the one `latest` names, or, when that
// one is missing, truncated, corrupt, unreadable or holds values that are not finite (a diverged
// run's, written by an older dptrain), the newest other checkpoint that reads and validates. Each
// skipped file adds a warning (path and reason) to `warnings`. nullopt (a fresh start) only when the
// directory holds no checkpoint at all (no ckpt-<step>.h5 and no `latest`); when it holds some but
// none can be used, throws one error listing each file and why.
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
