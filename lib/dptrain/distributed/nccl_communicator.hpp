#pragma once
// A thin RAII owner of one NCCL communicator, for distributed:: to build the in-node or flat communicator on.
// NCCL does not move the unique id between processes: rank 0 makes it (new_unique_id), the caller
// broadcasts its bytes (MPI_Bcast over the node's or the world's communicator), and every rank passes
// them here. Collectives are queued on the given stream and return at once; order them against the
// compute stream with events.
#include <cuda_runtime.h>
#include <nccl.h>

#include <array>
#include <cstddef>

namespace dptrain::distributed {

using NcclUniqueIdBytes = std::array<char, NCCL_UNIQUE_ID_BYTES>;

// A fresh id (call on one rank, then broadcast the bytes).
NcclUniqueIdBytes new_nccl_unique_id();

class NcclCommunicator {
 public:
  // Collective over all `size` ranks: each calls it with its own `rank`, the same id, on its own GPU
  // (`device` is made current first).
  NcclCommunicator(const NcclUniqueIdBytes& id, int size, int rank, int device);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int size() const { return size_; }
  int rank() const { return rank_; }
  ncclComm_t get() const { return comm_; }

  // Sum of `count` floats over all ranks, in place when send == receive.
  void all_reduce_sum(const float* send, float* receive, std::size_t count, cudaStream_t stream);
  // Rank r receives the sum of block r (`count_per_rank` floats) of every rank's `send`.
  void reduce_scatter_sum(const float* send, float* receive, std::size_t count_per_rank, cudaStream_t stream);
  // Every rank receives all ranks' `count_per_rank` floats, in rank order.
  void all_gather(const float* send, float* receive, std::size_t count_per_rank, cudaStream_t stream);
  // Rank `root`'s buffer to every rank.
  void broadcast(float* buffer, std::size_t count, int root, cudaStream_t stream);
  // After a failure on any rank: abandons pending operations instead of waiting for them forever.
  void abort() noexcept;

 private:
  ncclComm_t comm_ = nullptr;
  int size_ = 0;
  int rank_ = 0;
};

}  // namespace dptrain::distributed
