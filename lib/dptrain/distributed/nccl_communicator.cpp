#include "dptrain/distributed/nccl_communicator.hpp"

#include <cstring>

#include "dptrain/backend/cuda/check_cuda.hpp"

namespace dptrain::distributed {

NcclUniqueIdBytes new_nccl_unique_id() {
  ncclUniqueId id;
  DPTRAIN_NCCL_CHECK(ncclGetUniqueId(&id));
  NcclUniqueIdBytes bytes{};
  std::memcpy(bytes.data(), id.internal, bytes.size());
  return bytes;
}

NcclCommunicator::NcclCommunicator(const NcclUniqueIdBytes& id, int size, int rank, int device)
    : size_(size), rank_(rank) {
  DPTRAIN_CHECK(size > 0 && rank >= 0 && rank < size, "NCCL: rank ", rank, " is not in a communicator of ", size);
  DPTRAIN_CUDA_CHECK(cudaSetDevice(device));
  ncclUniqueId unique;
  std::memcpy(unique.internal, id.data(), id.size());
  DPTRAIN_NCCL_CHECK(ncclCommInitRank(&comm_, size, unique, rank));
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) ncclCommDestroy(comm_);
}

void NcclCommunicator::all_reduce_sum(const float* send, float* receive, std::size_t count, cudaStream_t stream) {
  DPTRAIN_NCCL_CHECK(ncclAllReduce(send, receive, count, ncclFloat32, ncclSum, comm_, stream));
}

void NcclCommunicator::reduce_scatter_sum(const float* send, float* receive, std::size_t count_per_rank,
                                          cudaStream_t stream) {
  DPTRAIN_NCCL_CHECK(ncclReduceScatter(send, receive, count_per_rank, ncclFloat32, ncclSum, comm_, stream));
}

void NcclCommunicator::all_gather(const float* send, float* receive, std::size_t count_per_rank, cudaStream_t stream) {
  DPTRAIN_NCCL_CHECK(ncclAllGather(send, receive, count_per_rank, ncclFloat32, comm_, stream));
}

void NcclCommunicator::broadcast(float* buffer, std::size_t count, int root, cudaStream_t stream) {
  DPTRAIN_NCCL_CHECK(ncclBroadcast(buffer, buffer, count, ncclFloat32, root, comm_, stream));
}

void NcclCommunicator::abort() noexcept {
  if (comm_) {
    ncclCommAbort(comm_);
    comm_ = nullptr;
  }
}

}  // namespace dptrain::distributed
