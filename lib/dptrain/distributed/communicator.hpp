#pragma once
// Collectives over the ranks of a job. Implementations: LocalCommunicator (one process, no MPI),
// MpiCommunicator (flat: one MPI communicator), HierarchicalCommunicator (reduce-scatter inside a
// node, allreduce of each shard between nodes, allgather inside the node) and, in the CUDA build,
// the NCCL ones. Buffers live on the device the communicator was made for (host memory for MPI).
//
// Every call is blocking for its caller, but an MPI implementation waits by polling, so a rank that
// never arrives, or stops answering, is named after the stall timeout instead of hanging the job
// (see StallWatch).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "dptrain/distributed/topology.hpp"

namespace dptrain::distributed {

enum class ElementType { f32, f64, i64 };
enum class ReduceOp { sum, max, min };

std::size_t size_of(ElementType type);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "flat MPI", "hierarchical MPI (2 nodes x 2)"...

  // In place, result on every rank.
  virtual void allreduce(void* data, std::size_t count, ElementType type, ReduceOp op) = 0;
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  // `all` receives every rank's `bytes` in rank order.
  virtual void allgather(const void* mine, void* all, std::size_t bytes) = 0;
  virtual void barrier() = 0;

  // From begin_long_wait until end_long_wait, collectives may wait up to `seconds` (when longer than
  // the stall timeout) for a rank busy with `why` (rank 0 writing a checkpoint): the stall watchdog
  // allows it and names `why` and `option` if it trips. Every rank brackets the same collectives.
  // String literals. Use LongWait. Communicators without a watchdog ignore it.
  virtual void begin_long_wait(const char* /*why*/, const char* /*option*/, double /*seconds*/) {}
  virtual void end_long_wait() {}

  void allreduce_sum(float* data, std::size_t count) { allreduce(data, count, ElementType::f32, ReduceOp::sum); }
  void allreduce_sum(double* data, std::size_t count) { allreduce(data, count, ElementType::f64, ReduceOp::sum); }
  std::int64_t max(std::int64_t value) {
    allreduce(&value, 1, ElementType::i64, ReduceOp::max);
    return value;
  }
};

// A long wait for the lifetime of a scope (see Communicator::begin_long_wait).
class LongWait {
 public:
  LongWait(Communicator& comm, const char* why, const char* option, double seconds) : comm_(comm) {
    comm_.begin_long_wait(why, option, seconds);
  }
  ~LongWait() { comm_.end_long_wait(); }
  LongWait(const LongWait&) = delete;
  LongWait& operator=(const LongWait&) = delete;

 private:
  Communicator& comm_;
};

// One process alone: every collective is the identity.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "single process"; }
  void allreduce(void*, std::size_t, ElementType, ReduceOp) override {}
  void broadcast(void*, std::size_t, int) override {}
  void allgather(const void* mine, void* all, std::size_t bytes) override;
  void barrier() override {}
};

enum class AllreduceKind { automatic, flat, hierarchical };
AllreduceKind parse_allreduce_kind(const std::string& text);  // auto | flat | hierarchical

struct CommunicatorOptions {
  AllreduceKind kind = AllreduceKind::automatic;
  double stall_timeout_seconds = 300;
  std::string failure_report;  // --failure-report: where rank 0 names the nodes of ranks that stopped answering
};

// The job's communicator over MPI_COMM_WORLD (a LocalCommunicator when MPI is not running). `auto`
// is hierarchical when there are several nodes with several ranks each, the same number on every
// node, and flat otherwise; `hierarchical` on a topology that cannot use it is an error.
std::unique_ptr<Communicator> make_communicator(const Topology& topology, const CommunicatorOptions& options);

}  // namespace dptrain::distributed
