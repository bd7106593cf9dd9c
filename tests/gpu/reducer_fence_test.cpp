// The gradient reducer on one GPU with streams that finish late. It must not let the allreduce read a
// bucket before the backward pass's kernels that write it have finished (the bucket's fence, waited on
// by the communication thread), nor let the optimizer read a bucket before the allreduce's result is
// there (synchronize() waits for every bucket, and the communicator returns only once its stream is
// done).
//
// One rank stands for a job of two. DelayedCommunicator's allreduce adds the other rank's gradient, a
// constant k, to the bucket on a stream of its own, behind a spin of kCommunicationMs on that stream,
// and returns once the stream is done (as the NCCL communicators do). The backward pass queues, on the
// backend's compute stream, kBackwardMs of GEMMs before each gradient's write, then reports it, as
// Net::backward does; the host never waits for the GPU. After synchronize(), an SGD step (learning rate
// 1, no momentum, from zero weights) reads the mean: every weight must be exactly -(g + k) / 2 (integers
// in f32: exact) in every bucket and step, the first step (the warm-up: buckets reduced in
// synchronize()) and the overlapped ones (buckets reduced on the communication thread).
//
// Why the delays make a missing order visible:
//  - Without the fence, the communication thread would sum a bucket as soon as the host reports it,
//    while the compute stream still has kBackwardMs of GEMMs queued before each of the bucket's writes.
//    The sum, kCommunicationMs later (shorter), reads the stale bucket; the late write then replaces
//    it: the weight becomes -g / 2.
//  - Without the wait for the allreduce, the scaling into the mean and the SGD step are queued on the
//    compute stream right behind the last write and run kCommunicationMs before the other stream adds
//    k: -(g / 2 + k), or -g / 2 where the sum lands after the read.
// A race only shows if the streams really overlap on this GPU, so the second test case makes both
// mistakes by hand with the same delays and requires the wrong values: delays too short to open the
// race fail the test instead of letting it pass without proving anything.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "dptrain/backend/cuda/check_cuda.hpp"
#include "dptrain/backend/cuda/streams.hpp"
#include "dptrain/distributed/gradient_reducer.hpp"
#include "gpu/delay_kernels.hpp"
#include "gpu/gpu_testing.hpp"

namespace dptrain {
namespace {
using distributed::ElementType;
using distributed::ReduceOp;
using gpu_testing::on;

constexpr double kBackwardMs = 30;      // GEMMs queued on the compute stream before each gradient's write
constexpr double kCommunicationMs = 4;  // the allreduce's spin on its own stream before it adds

// Parameter sizes in build order (the reducer takes them in reverse): with 1 MiB buckets they make
// buckets of one and of several parameters.
const std::vector<std::int64_t> kSizes = {4096, 300000, 17, 65536, 1000, 200000};
constexpr int kSteps = 4;

// This step's gradient element i of parameter p, and the other rank's gradient (every element):
// integers, so that (g + k) / 2 is exact in f32; k is never 0, so each wrong order gives another value.
float gradient(int step, std::size_t p, std::int64_t i) {
  return static_cast<float>(1 + i % 251 + 256 * static_cast<std::int64_t>(p) + 4096 * step);
}
float other_rank(int step) { return static_cast<float>(3 + 1000 * step); }

// A job of two ranks from one GPU: the other rank contributes k to every element. The sum runs on a
// stream of its own behind a spin, so its result lands late; with `wait` (the Communicator contract)
// allreduce returns once it has landed.
class DelayedCommunicator final : public distributed::Communicator {
 public:
  DelayedCommunicator() { DPTRAIN_CUDA_CHECK(cudaGetDevice(&device_)); }
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string name() const override { return "one GPU as two ranks, sums late on their own stream"; }

  void allreduce(void* data, std::size_t count, ElementType type, ReduceOp op) override {
    DPTRAIN_CHECK(type == ElementType::f32 && op == ReduceOp::sum, "the test communicator only sums f32");
    // Called from the reducer's communication thread, whose current device is its own.
    DPTRAIN_CUDA_CHECK(cudaSetDevice(device_));
    gpu_testing::spin(stream_.get(), static_cast<std::uint64_t>(spin_ms_ * 1e6));
    gpu_testing::add_constant(static_cast<float*>(data), count, other_.load(), stream_.get());
    ++allreduces_;
    if (wait_) finish();
  }
  void broadcast(void*, std::size_t, int) override { throw Error("the test communicator does not broadcast"); }
  void allgather(const void*, void*, std::size_t) override { throw Error("the test communicator does not gather"); }
  void barrier() override {}

  void set_other_rank(float k) { other_ = k; }
  // The spin before each sum (default kCommunicationMs).
  void set_spin_ms(double milliseconds) { spin_ms_ = milliseconds; }
  int allreduces() const { return allreduces_.load(); }
  // Off: allreduce returns as soon as its work is queued (a broken communicator, for the control).
  void set_wait(bool wait) { wait_ = wait; }
  void finish() { DPTRAIN_CUDA_CHECK(cudaStreamSynchronize(stream_.get())); }

 private:
  int device_ = 0;
  cuda::Stream stream_;  // non-blocking: never ordered with the compute stream by CUDA itself
  std::atomic<float> other_{0.f};
  std::atomic<int> allreduces_{0};
  bool wait_ = true;
  double spin_ms_ = kCommunicationMs;
};

// CUDA loads a kernel at its first launch (lazy loading: dptrain leaves CUDA_MODULE_LOADING to the
// user), and a load may wait for the device to drain. A first launch between a delay and what it must
// delay would then close the race the test opens: every kernel the steps use is launched once here,
// while the GPU is idle (fill, copy, axpby, the SGD update, the fence's event, the spin and the sum).
void load_kernels(Backend& be, DelayedCommunicator& comm) {
  Tensor a = be.allocate(Shape{1024}), b = be.allocate(Shape{1024}), v = be.allocate(Shape{1024});
  be.fill(a, 0.f);
  be.fill(b, 0.f);
  be.fill(v, 0.f);
  be.copy(a, b);
  be.axpby(0.5f, a, 0.f, b);
  const SgdTensors update[] = {{&a, &b, &v, 0.f}};
  be.sgd_update_all(update, SgdHyper{1.f, 0.f, false});
  be.fence()->wait();
  comm.set_other_rank(0.f);
  comm.allreduce(b.raw(), 1024, ElementType::f32, ReduceOp::sum);
  gpu_testing::finish_compute(be, b);
}

// How many elements of host tensor `actual` differ from `expected(i)`, and the first of them described
// with what each wrong order would have given.
struct Mismatches {
  std::int64_t count = 0;
  std::string first;
};
template <typename Expected>
void count_mismatches(const Tensor& actual, Expected expected, const std::string& what, Mismatches& out) {
  for (std::int64_t i = 0; i < actual.numel(); ++i) {
    const float want = expected(i), got = actual.data<float>()[i];
    if (got == want) continue;
    if (out.count++ == 0) {
      std::ostringstream text;
      text << what << " element " << i << ": " << got << ", expected " << want;
      out.first = text.str();
    }
  }
}
}  // namespace

TEST_CASE("gradient reducer on a GPU: late writes of the backward pass and late sums are seen in order",
          "[gpu][reducer]") {
  Backend& be = gpu_testing::gpu();
  gpu_testing::ComputeDelay delay(be);
  DelayedCommunicator comm;
  load_kernels(be, comm);
  std::vector<Parameter> parameters;
  for (std::size_t p = 0; p < kSizes.size(); ++p) {
    const Shape shape{kSizes[p]};
    std::string name = "p";  // not "p" + ...: GCC 12 warns falsely (-Wrestrict) on that inlined concatenation
    name += std::to_string(p);
    parameters.push_back({name, be.allocate(shape), be.allocate(shape)});
    be.fill(parameters.back().grad, -1.f);
  }
  std::vector<Parameter*> pointers;
  for (Parameter& p : parameters) pointers.push_back(&p);
  distributed::ReducerConfig config;
  config.bucket_bytes = 1u << 20;
  distributed::GradientReducer reducer(be, comm, pointers, config);  // each gradient becomes a bucket view
  REQUIRE(reducer.bucket_count() >= 3);

  std::vector<Tensor> velocity;
  for (const Parameter& p : parameters) velocity.push_back(be.allocate(p.value.shape()));
  int gemms = 0;
  std::int64_t wrong_weights = 0;
  for (int step = 0; step < kSteps; ++step) {
    INFO("step " << step << " (" << (step == 0 ? "warm-up: buckets reduced in synchronize()" : "overlapped") << ")");
    CHECK(reducer.overlapping() == (step > 0));
    // The step's gradients, on the device before the step starts: a copy from device memory never
    // makes the host wait, so the host queues the whole backward pass ahead of the GPU.
    std::vector<Tensor> sources;
    for (std::size_t p = 0; p < parameters.size(); ++p) {
      Tensor host = Tensor::empty(Shape{kSizes[p]});
      for (std::int64_t i = 0; i < kSizes[p]; ++i) host.data<float>()[i] = gradient(step, p, i);
      sources.push_back(on(be, host));
    }
    gpu_testing::finish_compute(be, sources[0]);
    comm.set_other_rank(other_rank(step));
    const int allreduces_before = comm.allreduces();
    // The backward pass: the last layers first, each gradient written behind its layer's kernels.
    for (std::size_t p = parameters.size(); p-- > 0;) {
      gemms = delay.queue(kBackwardMs);
      be.copy(sources[p], parameters[p].grad);
      reducer.gradient_ready(parameters[p]);
    }
    reducer.synchronize();
    CHECK(comm.allreduces() - allreduces_before == static_cast<int>(reducer.bucket_count()));
    // The optimizer reads the mean: w = 0 - 1 * (0 * v + g) with zero weights and velocity.
    Mismatches wrong;
    std::vector<SgdTensors> update;
    for (std::size_t p = 0; p < parameters.size(); ++p) {
      be.fill(parameters[p].value, 0.f);
      be.fill(velocity[p], 0.f);
      update.push_back({&parameters[p].value, &parameters[p].grad, &velocity[p], 0.f});
    }
    be.sgd_update_all(update, SgdHyper{1.f, 0.f, false});
    for (std::size_t p = 0; p < parameters.size(); ++p) {
      const Tensor weights = be.to_host(parameters[p].value);
      const float k = other_rank(step);
      count_mismatches(
          weights, [&](std::int64_t i) { return -(gradient(step, p, i) + k) / 2.f; },
          parameters[p].name +
              " weight (-g/2: the sum read the bucket before the backward wrote it; -(g/2 + k): "
              "the mean was read before the sum landed)",
          wrong);
    }
    INFO(wrong.first);
    CHECK(wrong.count == 0);
    wrong_weights += wrong.count;
  }
  // gpu-check copies this line into its summary: it says "exact" only when every weight was.
  std::printf(
      "reducer fence: %zu buckets, %d steps, %d GEMMs (%.1f ms each) before each gradient's write, "
      "%.0f ms spin before each sum: %s\n",
      reducer.bucket_count(), kSteps, gemms, delay.milliseconds_per_gemm(), kCommunicationMs,
      wrong_weights == 0 ? "every weight exact" : "WRONG weights (see the failures above)");
}

TEST_CASE("gradient reducer on a GPU: the same delays make a missing fence and a missing wait visible",
          "[gpu][reducer]") {
  Backend& be = gpu_testing::gpu();
  gpu_testing::ComputeDelay delay(be);
  DelayedCommunicator comm;
  load_kernels(be, comm);
  constexpr std::int64_t n = 300000;
  constexpr float k = 7.f;
  comm.set_other_rank(k);
  Tensor host = Tensor::empty(Shape{n});
  for (std::int64_t i = 0; i < n; ++i) host.data<float>()[i] = gradient(1, 0, i);
  const Tensor source = on(be, host);
  Tensor bucket = be.allocate(Shape{n});
  const auto start_over = [&] {
    be.fill(bucket, -1.f);
    gpu_testing::finish_compute(be, bucket);
  };
  auto* data = static_cast<float*>(bucket.raw());
  const auto sum = [&](std::int64_t i) { return gradient(1, 0, i) + k; };

  // 1. The bucket summed right after its write is queued (no fence): the sum must be lost.
  start_over();
  delay.queue(kBackwardMs);
  be.copy(source, bucket);
  comm.allreduce(data, n, ElementType::f32, ReduceOp::sum);
  Mismatches no_fence;
  count_mismatches(be.to_host(bucket), sum, "without the fence", no_fence);
  INFO("without a fence the sum read the bucket after the late write: the delays do not open the race here");
  CHECK(no_fence.count > 0);

  // 2. The same with the fence the reducer takes: right.
  start_over();
  delay.queue(kBackwardMs);
  be.copy(source, bucket);
  be.fence()->wait();
  comm.allreduce(data, n, ElementType::f32, ReduceOp::sum);
  Mismatches fenced;
  count_mismatches(be.to_host(bucket), sum, "with the fence", fenced);
  INFO(fenced.first);
  CHECK(fenced.count == 0);

  // 3. A communicator that returns before its sum has landed, then the mean: it must be wrong.
  start_over();
  be.copy(source, bucket);
  gpu_testing::finish_compute(be, bucket);
  comm.set_wait(false);
  // A longer spin than the steps': the host queues the mean well before the sum lands, even if this
  // thread is descheduled for a few ms between the two.
  comm.set_spin_ms(40);
  comm.allreduce(data, n, ElementType::f32, ReduceOp::sum);
  be.axpby(0.5f, bucket, 0.f, bucket);
  const Tensor early = be.to_host(bucket);
  comm.finish();
  comm.set_wait(true);
  comm.set_spin_ms(kCommunicationMs);
  Mismatches no_wait;
  count_mismatches(
      early, [&](std::int64_t i) { return sum(i) / 2.f; }, "without the wait", no_wait);
  INFO("the mean read after an unfinished sum was right: the communication delay does not open the race here");
  CHECK(no_wait.count > 0);
  // gpu-check copies this line into its summary: "as expected" only when the controls saw the races
  // and the fenced run was right.
  const bool as_expected = no_fence.count > 0 && no_wait.count > 0 && fenced.count == 0;
  std::printf(
      "reducer fence controls: without the fence %lld of %lld sums lost, without the wait %lld of %lld "
      "means wrong, with the fence %lld wrong: %s\n",
      static_cast<long long>(no_fence.count), static_cast<long long>(n), static_cast<long long>(no_wait.count),
      static_cast<long long>(n), static_cast<long long>(fenced.count),
      as_expected ? "as expected" : "NOT as expected (see the failures above)");
}

}  // namespace dptrain
