#pragma once
// What rank 0 has, on every rank: text (a manifest, a configuration) and records (core/fields.hpp)
// sent field by field, so no caller packs values into arrays by index.
#include <string>
#include <vector>

#include "dptrain/core/record_bytes.hpp"
#include "dptrain/distributed/communicator.hpp"

namespace dptrain::distributed {

// Collective: `bytes` as `root` has them (its length first), on every rank.
void broadcast_bytes(std::vector<char>& bytes, Communicator& comm, int root = 0);
// Collective: `text` as `root` has it, on every rank.
void broadcast_text(std::string& text, Communicator& comm, int root = 0);

// Collective: every field of `record` as `root` has it, on every rank.
template <class Record>
void broadcast_record(Record& record, Communicator& comm, int root = 0) {
  std::vector<char> bytes;
  if (comm.rank() == root) bytes = record_bytes(record);
  broadcast_bytes(bytes, comm, root);
  if (comm.rank() != root) read_record_bytes(bytes, record);
}

}  // namespace dptrain::distributed
