#pragma once
// The dataset's manifest as rank 0 reads it, on every rank: one reader instead of thousands of ranks
// opening one file at once (a metadata storm on a parallel file system).
#include <string>

#include "dptrain/data/manifest.hpp"
#include "dptrain/distributed/communicator.hpp"

namespace dptrain {

// Collective: rank 0 reads DIR/manifest.json and sends it to the others.
data::Manifest read_manifest(const std::string& directory, distributed::Communicator& comm);

}  // namespace dptrain
