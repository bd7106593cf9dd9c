#include "dptrain/distributed/broadcast.hpp"

#include <cstdint>

namespace dptrain::distributed {

void broadcast_bytes(std::vector<char>& bytes, Communicator& comm, int root) {
  auto length = static_cast<std::uint64_t>(bytes.size());
  comm.broadcast(&length, sizeof length, root);
  bytes.resize(static_cast<std::size_t>(length));
  if (length > 0) comm.broadcast(bytes.data(), bytes.size(), root);
}

void broadcast_text(std::string& text, Communicator& comm, int root) {
  std::vector<char> bytes(text.begin(), text.end());
  broadcast_bytes(bytes, comm, root);
  text.assign(bytes.begin(), bytes.end());
}

}  // namespace dptrain::distributed
