#include "dptrain/distributed/mpi_communicator.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include "dptrain/core/check_mpi.hpp"
#include "dptrain/distributed/mpi_lock.hpp"

namespace dptrain::distributed {

MPI_Datatype mpi_type(ElementType type) {
  switch (type) {
    case ElementType::f32: return MPI_FLOAT;
    case ElementType::f64: return MPI_DOUBLE;
    case ElementType::i64: return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  return MPI_OP_NULL;
}

namespace {
// MPI counts are ints: larger buffers go in pieces.
constexpr std::size_t kMaxCount = INT_MAX / 2;

int as_count(std::size_t n) { return static_cast<int>(n); }
}  // namespace

OwnedComm::OwnedComm(MPI_Comm source) {
  MpiLock lock;
  DPTRAIN_MPI_CHECK(MPI_Comm_dup(source, &comm_));
  describe();
}

OwnedComm::OwnedComm(MPI_Comm source, int color, int key) {
  MpiLock lock;
  DPTRAIN_MPI_CHECK(MPI_Comm_split(source, color, key, &comm_));
  describe();
}

void OwnedComm::describe() {
  DPTRAIN_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  DPTRAIN_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  DPTRAIN_MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

OwnedComm::~OwnedComm() {
  MpiLock lock;
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

MpiCommunicator::MpiCommunicator(MPI_Comm world, std::shared_ptr<StallWatch> watch)
    : comm_(world), watch_(std::move(watch)) {}

void MpiCommunicator::run(const char* call, const std::function<int(MPI_Request*)>& start) {
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  {
    MpiLock lock;
    rc = start(&request);
  }
  if (rc != MPI_SUCCESS) detail::throw_mpi_error(rc, call, __FILE__, __LINE__);
  watch_->wait(request);
}

void MpiCommunicator::allreduce(void* data, std::size_t count, ElementType type, ReduceOp op) {
  watch_->started("allreduce");
  auto* bytes = static_cast<char*>(data);
  const MPI_Comm comm = comm_.get();
  for (std::size_t done = 0; done < count;) {
    const int n = as_count(std::min(kMaxCount, count - done));
    void* p = bytes + done * size_of(type);
    run("MPI_Allreduce",
        [&](MPI_Request* r) { return MPI_Iallreduce(MPI_IN_PLACE, p, n, mpi_type(type), mpi_op(op), comm, r); });
    done += static_cast<std::size_t>(n);
  }
  watch_->finished();
}

void MpiCommunicator::broadcast(void* data, std::size_t bytes, int root) {
  watch_->started("broadcast");
  auto* base = static_cast<char*>(data);
  const MPI_Comm comm = comm_.get();
  for (std::size_t done = 0; done < bytes;) {
    const int n = as_count(std::min(kMaxCount, bytes - done));
    char* p = base + done;
    run("MPI_Bcast", [&](MPI_Request* r) { return MPI_Ibcast(p, n, MPI_BYTE, root, comm, r); });
    done += static_cast<std::size_t>(n);
  }
  watch_->finished();
}

void MpiCommunicator::allgather(const void* mine, void* all, std::size_t bytes) {
  DPTRAIN_CHECK(bytes * static_cast<std::size_t>(size()) < kMaxCount, "allgather of ", bytes,
                " bytes per rank is too large for one MPI call");
  watch_->started("allgather");
  const int n = as_count(bytes);
  const MPI_Comm comm = comm_.get();
  run("MPI_Allgather", [&](MPI_Request* r) { return MPI_Iallgather(mine, n, MPI_BYTE, all, n, MPI_BYTE, comm, r); });
  watch_->finished();
}

void MpiCommunicator::barrier() {
  watch_->started("barrier");
  const MPI_Comm comm = comm_.get();
  run("MPI_Barrier", [&](MPI_Request* r) { return MPI_Ibarrier(comm, r); });
  watch_->finished();
}

HierarchicalCommunicator::HierarchicalCommunicator(MPI_Comm world, const Topology& topology,
                                                   std::shared_ptr<StallWatch> watch)
    : MpiCommunicator(world, std::move(watch)),
      node_(world, topology.self().node_index, topology.rank),
      cross_(world, topology.self().local_rank, topology.rank) {
  DPTRAIN_CHECK(topology.uniform, "the hierarchical allreduce needs the same number of ranks on every node");
}

std::string HierarchicalCommunicator::name() const {
  return "hierarchical MPI (" + std::to_string(cross_.size()) + " nodes x " + std::to_string(node_.size()) + " ranks)";
}

void HierarchicalCommunicator::allreduce(void* data, std::size_t count, ElementType type, ReduceOp op) {
  if (op != ReduceOp::sum || type != ElementType::f32 || count < static_cast<std::size_t>(node_.size()) ||
      count > kMaxCount) {
    MpiCommunicator::allreduce(data, count, type, op);
    return;
  }
  watch().started("hierarchical allreduce");
  const int local = node_.size();
  // Shards as even as possible; the first `count % local` ranks take one element more.
  std::vector<int> counts(static_cast<std::size_t>(local)), offsets(static_cast<std::size_t>(local));
  const std::size_t base = count / static_cast<std::size_t>(local), extra = count % static_cast<std::size_t>(local);
  std::size_t offset = 0;
  for (int r = 0; r < local; ++r) {
    const std::size_t n = base + (static_cast<std::size_t>(r) < extra ? 1 : 0);
    counts[static_cast<std::size_t>(r)] = as_count(n);
    offsets[static_cast<std::size_t>(r)] = as_count(offset);
    offset += n;
  }
  const int mine = counts[static_cast<std::size_t>(node_.rank())];
  shard_.resize(static_cast<std::size_t>(mine) * sizeof(float));
  auto* values = static_cast<float*>(data);
  auto* shard = reinterpret_cast<float*>(shard_.data());

  const MPI_Comm node = node_.get(), cross = cross_.get();
  run("MPI_Reduce_scatter",
      [&](MPI_Request* r) { return MPI_Ireduce_scatter(values, shard, counts.data(), MPI_FLOAT, MPI_SUM, node, r); });
  if (cross_.size() > 1) {
    run("MPI_Allreduce",
        [&](MPI_Request* r) { return MPI_Iallreduce(MPI_IN_PLACE, shard, mine, MPI_FLOAT, MPI_SUM, cross, r); });
  }
  run("MPI_Allgatherv", [&](MPI_Request* r) {
    return MPI_Iallgatherv(shard, mine, MPI_FLOAT, values, counts.data(), offsets.data(), MPI_FLOAT, node, r);
  });
  watch().finished();
}

}  // namespace dptrain::distributed
