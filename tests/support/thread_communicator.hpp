#pragma once
// A job of N ranks as N threads of one process, for unit tests of threaded code (the gradient
// reducer's communication thread, with the backward pass on the rank's own thread) under the
// sanitizers, which cannot see inside MPI. Every collective is a rendezvous of all N ranks: each
// deposits its buffer, each computes its own result from all of them, and none writes before all
// have read.
#include <barrier>
#include <memory>
#include <vector>

#include "dptrain/distributed/communicator.hpp"

namespace dptrain::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size);
  int size() const { return size_; }
  // The communicator of rank `rank` (0 <= rank < size); call it from that rank's thread only.
  std::unique_ptr<distributed::Communicator> communicator(int rank);

 private:
  friend class ThreadCommunicator;
  int size_;
  std::barrier<> barrier_;
  std::vector<const void*> inputs_;
};

}  // namespace dptrain::testing
