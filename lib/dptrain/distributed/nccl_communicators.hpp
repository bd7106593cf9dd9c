#pragma once
// Gradient communicators whose buffers live on the GPU (CUDA build only).
//
// flat:          one NCCL communicator across all ranks (NCCL picks rings/trees over NVLink, PCIe
//                and the network itself).
// hierarchical:  NCCL inside the node (reduce-scatter, then allgather: the GPUs of a C4130 talk over
//                NVLink or the PCIe switch) and MPI between nodes on each rank's shard, staged
//                through pinned host memory, so no CUDA-aware MPI is required.
// The NCCL unique id is made by one rank and broadcast over MPI. Each call enqueues on the
// communicator's stream and sleeps until a host function queued behind it says it is done (waking
// every 20 ms for the stall timeout): a GPU collective that never completes aborts NCCL and the job
// with a message instead of hanging until the time limit.
// Metrics and control messages stay on the host communicator (distributed::Job::communicator()).
#include <cuda_runtime.h>

#include <memory>

#include "dptrain/distributed/communicator.hpp"

namespace dptrain::distributed {

// `device`: this rank's GPU ordinal. Requires MPI when there are several ranks.
std::unique_ptr<Communicator> make_gpu_communicator(const Topology& topology, const CommunicatorOptions& options,
                                                    int device);

}  // namespace dptrain::distributed
