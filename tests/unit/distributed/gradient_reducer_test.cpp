// The gradient reducer with N ranks as threads (support/thread_communicator): its communication
// thread sums buckets while the rank's own thread goes on reporting gradients, as in a backward pass.
// Run under ThreadSanitizer by the tsan preset (and AddressSanitizer by asan), which MPI hides.
#include "dptrain/distributed/gradient_reducer.hpp"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "support/thread_communicator.hpp"

using namespace dptrain;
using namespace dptrain::distributed;
using dptrain::testing::ThreadGroup;

namespace {
// Parameter sizes of a small net, in build order; with 96-byte buckets some share a bucket and the
// largest has one of its own.
const std::vector<std::int64_t> kSizes = {5, 40, 3, 17, 1, 9};

// Every rank r reports gradient (r + 1) * (step + 1) * (i + 1) for element i of parameter p (plus p);
// the average over N ranks is (N + 1) / 2 times the rank-1 value, exact in f32 for these integers.
float gradient(int rank, int step, std::size_t p, std::int64_t i) {
  return static_cast<float>((rank + 1) * (step + 1)) * static_cast<float>(i + 1 + static_cast<std::int64_t>(p));
}

// One rank's steps; returns the number of wrong averaged elements.
int run_rank(ThreadGroup& group, int rank, bool overlap, int steps) {
  auto backend = make_cpu_backend();
  auto comm = group.communicator(rank);
  std::vector<Parameter> parameters;
  for (std::size_t p = 0; p < kSizes.size(); ++p) {
    std::string name = "p";  // not "p" + ...: GCC 12 warns falsely (-Wrestrict) on that inlined concatenation
    name += std::to_string(p);
    parameters.push_back({name, Tensor::zeros(Shape{kSizes[p]}), Tensor::zeros(Shape{kSizes[p]})});
  }
  std::vector<Parameter*> pointers;
  for (Parameter& p : parameters) pointers.push_back(&p);
  ReducerConfig config;
  config.bucket_bytes = 96;
  config.overlap = overlap;
  GradientReducer reducer(*backend, *comm, pointers, config);
  int wrong = 0;
  const int n = group.size();
  for (int step = 0; step < steps; ++step) {
    // The backward pass finishes the last layers first.
    for (std::size_t p = parameters.size(); p-- > 0;) {
      float* g = parameters[p].grad.data<float>();
      for (std::int64_t i = 0; i < kSizes[p]; ++i) g[i] = gradient(rank, step, p, i);
      reducer.gradient_ready(parameters[p]);
    }
    reducer.synchronize();
    for (std::size_t p = 0; p < parameters.size(); ++p) {
      const float* g = parameters[p].grad.data<float>();
      for (std::int64_t i = 0; i < kSizes[p]; ++i) {
        const float expected = gradient(0, step, p, i) * static_cast<float>(n + 1) / 2.f;
        if (g[i] != expected) ++wrong;
      }
    }
  }
  const ReducerStats stats = reducer.stats();
  if (stats.steps != steps) ++wrong;
  return wrong;
}

int run_job(int ranks, bool overlap, int steps) {
  ThreadGroup group(ranks);
  std::vector<int> wrong(static_cast<std::size_t>(ranks), 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] { wrong[static_cast<std::size_t>(r)] = run_rank(group, r, overlap, steps); });
  }
  for (std::thread& t : threads) t.join();
  int total = 0;
  for (int w : wrong) total += w;
  return total;
}
}  // namespace

TEST_CASE("GradientReducer averages every gradient over ranks, bucket by bucket, overlapped or not",
          "[distributed][reducer]") {
  for (int ranks : {2, 4}) {
    for (bool overlap : {true, false}) {
      INFO("ranks " << ranks << ", overlap " << overlap);
      CHECK(run_job(ranks, overlap, 4) == 0);
    }
  }
}

namespace {
// A rank's communicator that counts the allreduces it was asked for.
class CountingCommunicator final : public Communicator {
 public:
  explicit CountingCommunicator(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  void allreduce(void* data, std::size_t count, ElementType type, ReduceOp op) override {
    inner_->allreduce(data, count, type, op);
    ++allreduces;
  }
  void broadcast(void* data, std::size_t bytes, int root) override { inner_->broadcast(data, bytes, root); }
  void allgather(const void* mine, void* all, std::size_t bytes) override { inner_->allgather(mine, all, bytes); }
  void barrier() override { inner_->barrier(); }
  std::atomic<int> allreduces{0};

 private:
  std::unique_ptr<Communicator> inner_;
};

// Rank `rank`'s three steps; per step, the allreduces done before synchronize() was called, once the
// backward pass has reported every gradient and the communication thread had 20 s to sum them; then
// the number of buckets.
std::vector<int> allreduces_before_synchronize(ThreadGroup& group, int rank) {
  auto backend = make_cpu_backend();
  CountingCommunicator comm(group.communicator(rank));
  std::vector<Parameter> parameters;
  for (std::size_t p = 0; p < kSizes.size(); ++p) {
    parameters.push_back({"p", Tensor::zeros(Shape{kSizes[p]}), Tensor::zeros(Shape{kSizes[p]})});
  }
  std::vector<Parameter*> pointers;
  for (Parameter& p : parameters) pointers.push_back(&p);
  ReducerConfig config;
  config.bucket_bytes = 96;
  GradientReducer reducer(*backend, comm, pointers, config);
  std::vector<int> before;
  for (int step = 0; step < 3; ++step) {
    const bool overlapping = reducer.overlapping();
    const int at_start = comm.allreduces.load();
    for (std::size_t p = parameters.size(); p-- > 0;) reducer.gradient_ready(parameters[p]);
    // With overlap the buckets are summed without synchronize(): wait until they are (bounded).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (overlapping && comm.allreduces.load() - at_start < static_cast<int>(reducer.bucket_count()) &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    before.push_back(comm.allreduces.load() - at_start);
    reducer.synchronize();
    if (comm.allreduces.load() - at_start != static_cast<int>(reducer.bucket_count())) before.push_back(-1);
  }
  before.push_back(static_cast<int>(reducer.bucket_count()));
  return before;
}
}  // namespace

TEST_CASE("the first step is a warm-up without overlap; from the second on, buckets are summed during the backward",
          "[distributed][reducer]") {
  ThreadGroup group(2);
  std::vector<int> before[2];
  std::thread other([&] { before[1] = allreduces_before_synchronize(group, 1); });
  before[0] = allreduces_before_synchronize(group, 0);
  other.join();
  for (const std::vector<int>& rank : before) {
    REQUIRE(rank.size() == 4);  // no step with another number of allreduces than buckets (-1)
    const int buckets = rank[3];
    CHECK(buckets > 1);
    CHECK(rank[0] == 0);        // the warm-up: everything in synchronize()
    CHECK(rank[1] == buckets);  // every bucket summed before synchronize()
    CHECK(rank[2] == buckets);
  }
}
