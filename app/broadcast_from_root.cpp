#include "broadcast_from_root.hpp"

#include <cstdint>

namespace dptrain::app {

void broadcast_text(std::string& text, distributed::Communicator& comm) {
  auto length = static_cast<std::int64_t>(text.size());
  comm.broadcast(&length, sizeof length, 0);
  text.resize(static_cast<std::size_t>(length));
  comm.broadcast(text.data(), text.size(), 0);
}

data::Manifest read_manifest(const std::string& directory, distributed::Communicator& comm) {
  std::string text;
  if (comm.rank() == 0) text = data::Manifest::read(directory).to_json();
  broadcast_text(text, comm);
  return data::Manifest::parse(text, directory + "/manifest.json");
}

}  // namespace dptrain::app
