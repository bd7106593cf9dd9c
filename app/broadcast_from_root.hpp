#pragma once
// What rank 0 reads and every rank needs: one reader instead of thousands of ranks opening one file
// at once (a metadata storm on a parallel file system).
#include <string>

#include "dptrain/data/manifest.hpp"
#include "dptrain/distributed/communicator.hpp"

namespace dptrain::app {

// Collective: `text` as rank 0 has it, on every rank.
void broadcast_text(std::string& text, distributed::Communicator& comm);

// Collective: rank 0 reads DIR/manifest.json and sends it to the others.
data::Manifest read_manifest(const std::string& directory, distributed::Communicator& comm);

}  // namespace dptrain::app
