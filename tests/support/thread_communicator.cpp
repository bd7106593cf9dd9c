#include "support/thread_communicator.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "dptrain/core/error.hpp"

namespace dptrain::testing {
using distributed::ElementType;
using distributed::ReduceOp;

namespace {
template <typename T>
void reduce_into(std::vector<char>& out, const std::vector<const void*>& inputs, std::size_t count, ReduceOp op) {
  out.resize(count * sizeof(T));
  auto* result = reinterpret_cast<T*>(out.data());
  std::memcpy(result, inputs[0], count * sizeof(T));
  for (std::size_t r = 1; r < inputs.size(); ++r) {
    const T* in = static_cast<const T*>(inputs[r]);
    for (std::size_t i = 0; i < count; ++i) {
      switch (op) {
        case ReduceOp::sum: result[i] += in[i]; break;
        case ReduceOp::max: result[i] = std::max(result[i], in[i]); break;
        case ReduceOp::min: result[i] = std::min(result[i], in[i]); break;
      }
    }
  }
}
}  // namespace

class ThreadCommunicator final : public distributed::Communicator {
 public:
  ThreadCommunicator(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size_; }
  std::string name() const override { return "threads (" + std::to_string(group_.size_) + " ranks)"; }

  void allreduce(void* data, std::size_t count, ElementType type, ReduceOp op) override {
    // Summed in rank order on every rank, so every rank gets the same bits.
    deposit(data);
    std::vector<char> result;
    switch (type) {
      case ElementType::f32: reduce_into<float>(result, group_.inputs_, count, op); break;
      case ElementType::f64: reduce_into<double>(result, group_.inputs_, count, op); break;
      case ElementType::i64: reduce_into<std::int64_t>(result, group_.inputs_, count, op); break;
    }
    group_.barrier_.arrive_and_wait();  // all have read every input
    std::memcpy(data, result.data(), result.size());
  }
  void broadcast(void* data, std::size_t bytes, int root) override {
    deposit(data);
    std::vector<char> copy(static_cast<const char*>(group_.inputs_[static_cast<std::size_t>(root)]),
                           static_cast<const char*>(group_.inputs_[static_cast<std::size_t>(root)]) + bytes);
    group_.barrier_.arrive_and_wait();
    std::memcpy(data, copy.data(), bytes);
  }
  void allgather(const void* mine, void* all, std::size_t bytes) override {
    deposit(mine);
    std::vector<char> copy(bytes * group_.inputs_.size());
    for (std::size_t r = 0; r < group_.inputs_.size(); ++r)
      std::memcpy(copy.data() + r * bytes, group_.inputs_[r], bytes);
    group_.barrier_.arrive_and_wait();
    std::memcpy(all, copy.data(), copy.size());
  }
  void barrier() override { group_.barrier_.arrive_and_wait(); }

 private:
  // Publishes this rank's buffer and waits until every rank has published (the barrier orders the
  // writes of inputs_ before every read of them).
  void deposit(const void* data) {
    group_.barrier_.arrive_and_wait();  // the previous collective's reads are over
    group_.inputs_[static_cast<std::size_t>(rank_)] = data;
    group_.barrier_.arrive_and_wait();
  }
  ThreadGroup& group_;
  int rank_;
};

ThreadGroup::ThreadGroup(int size) : size_(size), barrier_(size), inputs_(static_cast<std::size_t>(size), nullptr) {
  DPTRAIN_CHECK(size > 0, "a thread group needs at least one rank");
}

std::unique_ptr<distributed::Communicator> ThreadGroup::communicator(int rank) {
  DPTRAIN_CHECK(rank >= 0 && rank < size_, "rank ", rank, " is not in a group of ", size_);
  return std::make_unique<ThreadCommunicator>(*this, rank);
}

}  // namespace dptrain::testing
