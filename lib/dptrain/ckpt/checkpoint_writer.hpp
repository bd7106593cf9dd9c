#pragma once
// The durable, atomic write of one checkpoint into a checkpoint directory (rank 0 calls it).
#include <cstdint>
#include <string>

#include "dptrain/ckpt/training_state.hpp"

namespace dptrain::ckpt {

struct WriteReport {
  std::string path;         // the final ckpt-<step>.h5
  std::uint64_t bytes = 0;  // its size
  double seconds = 0;       // the whole protocol, fsyncs included
  double megabytes_per_second() const { return seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0; }
};

// Writes `state` as DIR/ckpt-<global step>.h5: first to ckpt-<step>.h5.tmp (created exclusively,
// never through a symlink: exclusive_file.hpp; flushed, closed and fsynced), renamed into place, the
// directory fsynced, then `latest` replaced atomically to name it. A process killed at any point
// leaves `latest` naming a complete, valid checkpoint (or no `latest` before the first one). A state
// holding a NaN or an infinity is refused before anything is written (the error names the step, the
// tensor and the checkpoint `latest` still names). Creates DIR when needed. Retention is a separate
// call (prune_checkpoints).
WriteReport write_checkpoint(const std::string& directory, const TrainingState& state);

// The same durable write of one file at `path` (temporary beside it, fsync, rename, fsync of its
// directory), without a directory's `latest` or the finiteness check. Replaces an existing file.
void write_checkpoint_as(const std::string& path, const TrainingState& state);
// The same for a file the user named (`dptrain import`'s output): an existing `path` is an error and
// is never replaced, even one that appears while the file is written.
void write_new_checkpoint(const std::string& path, const TrainingState& state);

}  // namespace dptrain::ckpt
