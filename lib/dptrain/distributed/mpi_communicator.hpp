#pragma once
// Collectives on MPI communicators, guarded by the StallWatch: each is started non-blocking under the
// MPI lock and polled by the caller (mpi_lock.hpp says why nothing blocks inside MPI).
#include <mpi.h>

#include <functional>
#include <memory>
#include <vector>

#include "dptrain/distributed/communicator.hpp"
#include "dptrain/distributed/stall_watch.hpp"

namespace dptrain::distributed {

// The stall watch of the job's communicators: the timeout and failure report of `options`, the node
// of every rank, a heartbeat thread where MPI allows a second thread.
StallWatchOptions stall_watch_options(const Topology& topology, const CommunicatorOptions& options);

MPI_Datatype mpi_type(ElementType type);
MPI_Op mpi_op(ReduceOp op);

// Owns a duplicate of a communicator (errors returned, not fatal) and frees it.
class OwnedComm {
 public:
  explicit OwnedComm(MPI_Comm source);             // MPI_Comm_dup
  OwnedComm(MPI_Comm source, int color, int key);  // MPI_Comm_split
  ~OwnedComm();
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;
  MPI_Comm get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  void describe();
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(MPI_Comm world, std::shared_ptr<StallWatch> watch);
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  std::string name() const override { return "flat MPI"; }
  void allreduce(void* data, std::size_t count, ElementType type, ReduceOp op) override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  void allgather(const void* mine, void* all, std::size_t bytes) override;
  void barrier() override;
  void begin_long_wait(const char* why, const char* option, double seconds) override {
    watch_->begin_long_wait(why, option, seconds);
  }
  void end_long_wait() override { watch_->end_long_wait(); }

 protected:
  // Runs one MPI collective named `call`: `start(&request)` (returning an MPI error code) under the
  // MPI lock, then the watch's polled wait.
  void run(const char* call, const std::function<int(MPI_Request*)>& start);
  StallWatch& watch() { return *watch_; }

 private:
  OwnedComm comm_;
  std::shared_ptr<StallWatch> watch_;
};

// The allreduce of sums in three stages, so that between nodes each rank moves only its shard
// (1/local_size of the buffer) and every rank of a node uses the network at once: reduce-scatter
// inside the node, allreduce of the shard among the ranks with the same local rank (one per node),
// allgather inside the node. Other operations and other reductions go through the flat path.
class HierarchicalCommunicator final : public MpiCommunicator {
 public:
  HierarchicalCommunicator(MPI_Comm world, const Topology& topology, std::shared_ptr<StallWatch> watch);
  std::string name() const override;
  void allreduce(void* data, std::size_t count, ElementType type, ReduceOp op) override;

 private:
  OwnedComm node_, cross_;
  std::vector<char> shard_;  // this rank's shard between the stages
};

}  // namespace dptrain::distributed
