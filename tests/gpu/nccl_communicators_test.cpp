// The GPU gradient communicators under mpiexec: flat NCCL and hierarchical NCCL + MPI sum device
// buffers exactly (integers), for sizes that do and do not divide among the ranks of a node.
// Skipped (77) without a usable GPU, or with fewer GPUs than ranks on this machine.
#include "dptrain/distributed/nccl_communicators.hpp"

#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "dptrain/backend/cuda/check_cuda.hpp"
#include "dptrain/backend/cuda/device_query.hpp"
#include "dptrain/distributed/launcher.hpp"
#include "mpi/mpi_testing.hpp"

using namespace dptrain;
using namespace dptrain::distributed;

namespace {
testing::MpiVerdict verdict;

void check_sum(Communicator& comm, std::size_t count) {
  std::vector<float> host = testing::rank_pattern(count, comm.rank());
  float* device = nullptr;
  DPTRAIN_CUDA_CHECK(cudaMalloc(&device, count * sizeof(float)));
  DPTRAIN_CUDA_CHECK(cudaMemcpy(device, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  comm.allreduce_sum(device, count);
  DPTRAIN_CUDA_CHECK(cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost));
  DPTRAIN_CUDA_CHECK(cudaFree(device));
  verdict.expect(testing::is_rank_pattern_sum(host, comm.size()),
                 comm.name() + ": sum of " + std::to_string(count) + " floats on the GPU");
}
}  // namespace

int main() {
  MpiSession session;
  std::string why;
  int gpus = 0;
  const bool usable = cuda::gpu_usable(why) && cudaGetDeviceCount(&gpus) == cudaSuccess;
  const Topology topology = discover_topology(session.active() ? MPI_COMM_WORLD : MPI_COMM_NULL, 0, gpus, nullptr);
  if (!usable || gpus < topology.local_size()) {
    const std::string reason = usable ? "fewer GPUs than ranks on this node" : "no usable GPU: " + why;
    std::printf("SKIP: %s\n", reason.c_str());
    return 77;
  }
  const int device = topology.self().device;
  for (AllreduceKind kind : {AllreduceKind::flat, AllreduceKind::hierarchical}) {
    if (kind == AllreduceKind::hierarchical && !session.active()) continue;  // needs MPI
    auto comm = make_gpu_communicator(topology, {kind, 60, ""}, device);
    for (std::size_t count : {std::size_t{1}, std::size_t{1001}, std::size_t{1} << 20}) check_sum(*comm, count);
  }
  return verdict.finish("nccl_communicators");
}
