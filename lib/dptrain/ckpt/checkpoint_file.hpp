#pragma once
// One checkpoint file in the layout of checkpoint_layout.hpp: writing it where told, and reading it
// back with every attribute, size and checksum validated.
#include <string>

#include "dptrain/ckpt/training_state.hpp"

namespace dptrain::ckpt {

// The bytes of a checkpoint file holding `state`, built in memory (h5::build_file_image), every call
// checked. Takes the process-wide HDF5 lock, since loader threads may be reading shards meanwhile.
// write_checkpoint (checkpoint_writer.hpp) writes them in the durable protocol.
std::string checkpoint_file_image(const TrainingState& state);

// Writes `state` to `path` (truncating), not atomic and not fsynced (tests and tools); errors name
// the path and the cause.
void write_checkpoint_file(const std::string& path, const TrainingState& state);

// Reads and validates a checkpoint file: the format attributes, every dataset's type, size and CRC-32,
// the counts of each section, and that every momentum buffer belongs to a parameter of its shape.
// Errors are one sentence naming the path and the field or dataset. `state.source` is set to `path`.
TrainingState read_checkpoint(const std::string& path);

}  // namespace dptrain::ckpt
