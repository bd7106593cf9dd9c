#include "dptrain/train/shared_manifest.hpp"

#include "dptrain/distributed/broadcast.hpp"

namespace dptrain {

data::Manifest read_manifest(const std::string& directory, distributed::Communicator& comm) {
  std::string text;
  if (comm.rank() == 0) text = data::Manifest::read(directory).to_json();
  distributed::broadcast_text(text, comm);
  return data::Manifest::parse(text, directory + "/manifest.json");
}

}  // namespace dptrain
