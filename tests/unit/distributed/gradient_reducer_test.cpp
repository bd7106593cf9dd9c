// The gradient reducer with N ranks as threads (support/thread_communicator): its communication
// thread sums buckets while the rank's own thread goes on reporting gradients, as in a backward pass.
// Run under ThreadSanitizer by the tsan preset (and AddressSanitizer by asan), which MPI hides.
#include "dptrain/distributed/gradient_reducer.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
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
