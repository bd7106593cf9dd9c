#include "dptrain/distributed/nccl_communicators.hpp"

#include <mpi.h>

#include <chrono>

#include "dptrain/backend/cuda/check_cuda.hpp"
#include "dptrain/core/check_mpi.hpp"
#include "dptrain/core/completion_latch.hpp"
#include "dptrain/distributed/launcher.hpp"
#include "dptrain/distributed/mpi_communicator.hpp"
#include "dptrain/distributed/mpi_lock.hpp"
#include "dptrain/distributed/nccl_communicator.hpp"

namespace dptrain::distributed {
namespace {

ncclDataType_t nccl_type(ElementType type) {
  switch (type) {
    case ElementType::f32: return ncclFloat32;
    case ElementType::f64: return ncclFloat64;
    case ElementType::i64: return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  return ncclSum;
}

// An NCCL communicator over `comm` (MPI, or null for one process): rank 0 of `comm` makes the id.
std::unique_ptr<NcclCommunicator> nccl_over(MPI_Comm comm, int device) {
  int rank = 0, size = 1;
  // At start-up, every rank together: blocking under the MPI lock is fine (mpi_lock.hpp).
  MpiLock lock;
  if (comm != MPI_COMM_NULL) {
    DPTRAIN_MPI_CHECK(MPI_Comm_rank(comm, &rank));
    DPTRAIN_MPI_CHECK(MPI_Comm_size(comm, &size));
  }
  NcclUniqueIdBytes id{};
  if (rank == 0) id = new_nccl_unique_id();
  if (comm != MPI_COMM_NULL) DPTRAIN_MPI_CHECK(MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_BYTE, 0, comm));
  return std::make_unique<NcclCommunicator>(id, size, rank, device);
}

// The stream the collectives run on, and the wait that turns a hang into an abort. In a job of
// several ranks the stall watch keeps the time, so a stalled NCCL collective names the ranks that
// stopped answering (their heartbeats go on while NCCL waits); one process alone has no watch.
class GpuCollectives {
 public:
  GpuCollectives(int device, double timeout, std::shared_ptr<StallWatch> watch)
      : device_(device), timeout_(timeout), watch_(std::move(watch)) {
    DPTRAIN_CUDA_CHECK(cudaSetDevice(device_));
    DPTRAIN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~GpuCollectives() { cudaStreamDestroy(stream_); }
  GpuCollectives(const GpuCollectives&) = delete;
  GpuCollectives& operator=(const GpuCollectives&) = delete;

  cudaStream_t stream() const { return stream_; }
  const std::shared_ptr<StallWatch>& watch() const { return watch_; }
  // The current device is per thread, and the gradient reducer calls from its communication thread:
  // every collective first makes this rank's GPU current (NCCL launches on the current device).
  void bind() const { DPTRAIN_CUDA_CHECK(cudaSetDevice(device_)); }

  // Waits for the stream without spinning: a host function queued behind the collective signals a
  // latch, and this thread sleeps on it. It wakes every kLook to look at the stream's error state (a
  // host function is not called after a device error) and, in a job of several ranks, to let the
  // stall watch check its clock, so a stalled collective is still reported after the timeout.
  void wait(const char* what, NcclCommunicator& nccl) {
    latch_->arm();
    DPTRAIN_CUDA_CHECK(cudaLaunchHostFunc(stream_, &CompletionLatch::signal_and_release,
                                          new std::shared_ptr<CompletionLatch>(latch_)));
    auto finished = [this] {
      if (latch_->wait_for(kLook)) return true;
      const cudaError_t state = cudaStreamQuery(stream_);
      if (state != cudaSuccess && state != cudaErrorNotReady) DPTRAIN_CUDA_CHECK(state);
      return false;
    };
    if (watch_) {
      watch_->started(what);
      struct Finish {
        StallWatch& watch;
        ~Finish() { watch.finished(); }
      } finish{*watch_};
      watch_->wait_until(finished, [&nccl] { nccl.abort(); });
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    while (!finished()) {
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited > timeout_) {
        nccl.abort();
        abort_job(std::string("NCCL ") + what + " has not completed after " + std::to_string(static_cast<int>(waited)) +
                      " s (--stall-timeout); a GPU is stuck; aborting",
                  1);
      }
    }
  }

 private:
  int device_;
  double timeout_;
  std::shared_ptr<StallWatch> watch_;
  cudaStream_t stream_ = nullptr;
  // Shared with the host functions in flight: one may still run after this object is gone.
  std::shared_ptr<CompletionLatch> latch_ = std::make_shared<CompletionLatch>();
  static constexpr std::chrono::microseconds kLook{20000};
};

class NcclFlatCommunicator final : public Communicator {
 public:
  NcclFlatCommunicator(MPI_Comm world, int device, double timeout, std::shared_ptr<StallWatch> watch)
      : gpu_(device, timeout, std::move(watch)), nccl_(nccl_over(world, device)) {}
  int rank() const override { return nccl_->rank(); }
  int size() const override { return nccl_->size(); }
  std::string name() const override { return "flat NCCL"; }

  void allreduce(void* data, std::size_t count, ElementType type, ReduceOp op) override {
    gpu_.bind();
    DPTRAIN_NCCL_CHECK(ncclAllReduce(data, data, count, nccl_type(type), nccl_op(op), nccl_->get(), gpu_.stream()));
    gpu_.wait("allreduce", *nccl_);
  }
  void broadcast(void* data, std::size_t bytes, int root) override {
    gpu_.bind();
    DPTRAIN_NCCL_CHECK(ncclBroadcast(data, data, bytes, ncclChar, root, nccl_->get(), gpu_.stream()));
    gpu_.wait("broadcast", *nccl_);
  }
  void allgather(const void* mine, void* all, std::size_t bytes) override {
    gpu_.bind();
    DPTRAIN_NCCL_CHECK(ncclAllGather(mine, all, bytes, ncclChar, nccl_->get(), gpu_.stream()));
    gpu_.wait("allgather", *nccl_);
  }
  void barrier() override {
    // A one-element allreduce on the stream is a barrier among the GPUs' streams.
    if (!token_) DPTRAIN_CUDA_CHECK(cudaMalloc(&token_, sizeof(float)));
    allreduce(token_, 1, ElementType::f32, ReduceOp::sum);
  }
  ~NcclFlatCommunicator() override {
    if (token_) cudaFree(token_);
  }

 private:
  GpuCollectives gpu_;
  std::unique_ptr<NcclCommunicator> nccl_;
  float* token_ = nullptr;
};

class NcclHierarchicalCommunicator final : public Communicator {
 public:
  NcclHierarchicalCommunicator(const Topology& topology, int device, const CommunicatorOptions& options)
      : gpu_(device, options.stall_timeout_seconds,
             std::make_shared<StallWatch>(MPI_COMM_WORLD, stall_watch_options(topology, options))),
        node_(MPI_COMM_WORLD, topology.self().node_index, topology.rank),
        cross_(std::make_unique<MpiCommunicator>(split(topology), gpu_.watch())),
        world_(MPI_COMM_WORLD, gpu_.watch()),
        nccl_(nccl_over(node_.get(), device)),
        world_size_(topology.size()),
        world_rank_(topology.rank) {
    DPTRAIN_CHECK(topology.uniform, "the hierarchical allreduce needs the same number of ranks on every node");
  }
  ~NcclHierarchicalCommunicator() override {
    if (scratch_) cudaFree(scratch_);
    if (host_) cudaFreeHost(host_);
    MpiLock lock;
    if (cross_comm_ != MPI_COMM_NULL) MPI_Comm_free(&cross_comm_);
  }
  int rank() const override { return world_rank_; }
  int size() const override { return world_size_; }
  std::string name() const override {
    return "hierarchical NCCL + MPI (" + std::to_string(cross_->size()) + " nodes x " + std::to_string(node_.size()) +
           " GPUs)";
  }

  void allreduce(void* data, std::size_t count, ElementType type, ReduceOp op) override {
    gpu_.bind();
    DPTRAIN_CHECK(type == ElementType::f32 && op == ReduceOp::sum,
                  "the hierarchical GPU allreduce sums f32 gradients only");
    const std::size_t local = static_cast<std::size_t>(node_.size());
    const std::size_t shard = (count + local - 1) / local;  // NCCL wants equal blocks: pad the last
    reserve(shard * local);
    const cudaStream_t s = gpu_.stream();
    DPTRAIN_CUDA_CHECK(cudaMemcpyAsync(scratch_, data, count * sizeof(float), cudaMemcpyDeviceToDevice, s));
    if (shard * local > count) {
      DPTRAIN_CUDA_CHECK(cudaMemsetAsync(scratch_ + count, 0, (shard * local - count) * sizeof(float), s));
    }
    float* mine = scratch_ + static_cast<std::size_t>(node_.rank()) * shard;
    nccl_->reduce_scatter_sum(scratch_, mine, shard, s);
    if (cross_->size() > 1) {
      DPTRAIN_CUDA_CHECK(cudaMemcpyAsync(host_, mine, shard * sizeof(float), cudaMemcpyDeviceToHost, s));
      gpu_.wait("reduce-scatter", *nccl_);
      cross_->allreduce_sum(host_, shard);
      DPTRAIN_CUDA_CHECK(cudaMemcpyAsync(mine, host_, shard * sizeof(float), cudaMemcpyHostToDevice, s));
    }
    nccl_->all_gather(mine, scratch_, shard, s);
    DPTRAIN_CUDA_CHECK(cudaMemcpyAsync(data, scratch_, count * sizeof(float), cudaMemcpyDeviceToDevice, s));
    gpu_.wait("allgather", *nccl_);
  }
  // The rest is rare (start-up, metrics) and goes through the flat world path on the host.
  void broadcast(void* data, std::size_t bytes, int root) override {
    gpu_.bind();
    std::vector<char> host(bytes);
    DPTRAIN_CUDA_CHECK(cudaMemcpy(host.data(), data, bytes, cudaMemcpyDeviceToHost));
    world_.broadcast(host.data(), bytes, root);
    DPTRAIN_CUDA_CHECK(cudaMemcpy(data, host.data(), bytes, cudaMemcpyHostToDevice));
  }
  void allgather(const void* mine, void* all, std::size_t bytes) override {
    gpu_.bind();
    std::vector<char> in(bytes), out(bytes * static_cast<std::size_t>(world_size_));
    DPTRAIN_CUDA_CHECK(cudaMemcpy(in.data(), mine, bytes, cudaMemcpyDeviceToHost));
    world_.allgather(in.data(), out.data(), bytes);
    DPTRAIN_CUDA_CHECK(cudaMemcpy(all, out.data(), out.size(), cudaMemcpyHostToDevice));
  }
  void barrier() override { world_.barrier(); }

 private:
  MPI_Comm split(const Topology& topology) {
    MpiLock lock;
    DPTRAIN_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, topology.self().local_rank, topology.rank, &cross_comm_));
    return cross_comm_;
  }
  void reserve(std::size_t elements) {
    if (elements <= capacity_) return;
    if (scratch_) DPTRAIN_CUDA_CHECK(cudaFree(scratch_));
    if (host_) DPTRAIN_CUDA_CHECK(cudaFreeHost(host_));
    DPTRAIN_CUDA_CHECK(cudaMalloc(&scratch_, elements * sizeof(float)));
    DPTRAIN_CUDA_CHECK(cudaMallocHost(&host_, elements * sizeof(float)));
    capacity_ = elements;
  }

  GpuCollectives gpu_;
  MPI_Comm cross_comm_ = MPI_COMM_NULL;
  OwnedComm node_;
  std::unique_ptr<MpiCommunicator> cross_;
  MpiCommunicator world_;  // the rare host-side collectives (start-up, metrics)
  std::unique_ptr<NcclCommunicator> nccl_;
  int world_size_, world_rank_;
  float* scratch_ = nullptr;
  float* host_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> make_gpu_communicator(const Topology& topology, const CommunicatorOptions& options,
                                                    int device) {
  const bool mpi = in_multi_rank_job();
  const bool can_split = mpi && topology.uniform && topology.node_count > 1 && topology.local_size() > 1;
  if (options.kind == AllreduceKind::hierarchical || (options.kind == AllreduceKind::automatic && can_split)) {
    DPTRAIN_CHECK(mpi, "--allreduce hierarchical needs several ranks (srun or mpiexec)");
    return std::make_unique<NcclHierarchicalCommunicator>(topology, device, options);
  }
  auto watch = mpi ? std::make_shared<StallWatch>(MPI_COMM_WORLD, stall_watch_options(topology, options)) : nullptr;
  return std::make_unique<NcclFlatCommunicator>(mpi ? MPI_COMM_WORLD : MPI_COMM_NULL, device,
                                                options.stall_timeout_seconds, std::move(watch));
}

}  // namespace dptrain::distributed
