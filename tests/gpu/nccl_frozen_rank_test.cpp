// A rank frozen inside the GPU gradient allreduce is named, with its node, while the others wait:
// two ranks as two simulated nodes of one GPU each (--ranks-per-node 1; one GPU serves both, as NCCL
// allows across nodes), the hierarchical communicator (NCCL in the node, MPI between nodes). Rank 1
// starts an allreduce of a gradient-sized device buffer and, while it waits, stops itself whole
// (SIGSTOP); rank 0 joins later and must report rank 1 as a rank that stopped answering after the
// stall timeout (CTest matches the report). Skipped (77) without a usable GPU.
#include <cuda_runtime.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "dptrain/backend/cuda/check_cuda.hpp"
#include "dptrain/backend/cuda/device_query.hpp"
#include "dptrain/distributed/launcher.hpp"
#include "dptrain/distributed/nccl_communicators.hpp"

using namespace dptrain;
using namespace dptrain::distributed;

int main() {
  MpiSession session;
  std::string why;
  int gpus = 0;
  if (!cuda::gpu_usable(why) || cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 1) {
    std::printf("SKIP: no usable GPU: %s\n", why.c_str());
    return 77;
  }
  if (!session.active()) {
    std::printf("SKIP: needs 2 ranks (mpiexec -n 2)\n");
    return 77;
  }
  const Topology topology = discover_topology(MPI_COMM_WORLD, 1, gpus, nullptr);
  CommunicatorOptions options;
  options.kind = AllreduceKind::hierarchical;
  options.stall_timeout_seconds = 8;  // longer than the 5 s after which a rank counts as silent
  auto comm = make_gpu_communicator(topology, options, topology.self().device);
  const std::size_t count = 4u << 20;  // 16 MB, far above any eager limit of the MPI stage
  float* gradients = nullptr;
  DPTRAIN_CUDA_CHECK(cudaMalloc(&gradients, count * sizeof(float)));
  DPTRAIN_CUDA_CHECK(cudaMemset(gradients, 0, count * sizeof(float)));
  comm->barrier();
  if (comm->rank() == 1) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      std::raise(SIGSTOP);
    }).detach();
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
  comm->allreduce_sum(gradients, count);
  std::printf("FAIL: the allreduce finished although rank 1 is frozen\n");
  return 1;
}
