#pragma once
// One checkpoint file in the layout of checkpoint_layout.hpp: writing it where told, and reading it
// back with every attribute, size and checksum validated.
#include <string>

#include "dptrain/ckpt/training_state.hpp"

namespace dptrain::ckpt {

// Writes `state` to `path` (truncating), flushes and closes it, checking every call. Not atomic and
// not fsynced: write_checkpoint (checkpoint_writer.hpp) wraps it in the durable protocol. Takes the
// process-wide HDF5 lock, since loader threads may be reading shards meanwhile. Errors name
// `shown_as` when given: the writer passes a /proc/self/fd path, which would tell the reader nothing.
void write_checkpoint_file(const std::string& path, const TrainingState& state, const std::string& shown_as = "");

// Reads and validates a checkpoint file: the format attributes, every dataset's type, size and CRC-32,
// the counts of each section, and that every momentum buffer belongs to a parameter of its shape.
// Errors are one sentence naming the path and the field or dataset. `state.source` is set to `path`.
TrainingState read_checkpoint(const std::string& path);

}  // namespace dptrain::ckpt
