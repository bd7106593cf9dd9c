#pragma once
// Averages the parameter gradients over all ranks, overlapped with the backward pass.
//
// Parameters are grouped into buckets of about `bucket_bytes`, in the order their gradients become
// final (reverse build order: the last layers first). Net::backward reports each parameter as soon
// as its gradient is written. Each parameter's gradient tensor is a view into its bucket's flat buffer
// (the constructor makes it so), so the backward pass writes straight into the buffer the allreduce
// sums in place; when a bucket is complete, the reducer hands it to a communication thread, which sums
// it over the ranks while the backward pass goes on with earlier layers. On a GPU the backward's
// writes are queued on the compute stream: the bucket carries a fence, and the communication thread
// waits on it before it sums the bucket on its own stream (NCCL), so the host that queues the
// backward pass never waits. synchronize() waits for the buckets still in flight and scales each
// bucket into the average (sum / world size: every rank's loss is the mean over its own batch, so
// this is the mean over the global batch), which the gradients then hold.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dptrain/core/trace_recorder.hpp"
#include "dptrain/distributed/communicator.hpp"
#include "dptrain/layers/layer.hpp"
#include "dptrain/net/step_hooks.hpp"

namespace dptrain {
class Net;
}

namespace dptrain::distributed {

struct ReducerConfig {
  std::size_t bucket_bytes = 25u << 20;  // --bucket-mb
  // off: every bucket is reduced in synchronize(). On: from the second step of the process on; the
  // first is a warm-up without overlap, so one-time work on the compute stream (cuDNN's algorithm
  // searches, which time candidates; CUDA's module loading) does not race the first buckets' NCCL
  // kernels, which would skew the timings and cache slower algorithms for the whole run.
  bool overlap = true;
};

struct ReducerStats {
  double communication_seconds = 0;  // time the allreduces took
  double exposed_seconds = 0;        // time synchronize() waited for them (not hidden by the backward pass)
  std::int64_t steps = 0;
  std::int64_t bytes = 0;  // reduced per step
  // The share of communication time hidden behind the backward pass.
  double hidden_fraction() const {
    return communication_seconds > 0 ? std::max(0.0, 1.0 - exposed_seconds / communication_seconds) : 0.0;
  }
};

class GradientReducer final : public StepHooks {
 public:
  // `parameters` in build order (Net::parameters()).
  GradientReducer(Backend& backend, Communicator& comm, std::vector<Parameter*> parameters, ReducerConfig config);
  ~GradientReducer() override;
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Takes the net's steps (its StepHooks) from now on, until this reducer is destroyed: each gradient
  // as the backward pass finishes it, and synchronize() before the update. The net must outlive it.
  void attach(Net& net);
  // A parameter's gradient is final for this step.
  void gradient_ready(Parameter& parameter) override;
  // Every gradient is averaged over the ranks when this returns. Checks that the backward pass
  // reported every parameter once.
  void synchronize();
  void gradients_needed() override { synchronize(); }

  std::size_t bucket_count() const { return buckets_.size(); }
  // When the last step's backward pass had written every gradient (steady_clock seconds since its
  // epoch; 0 on one rank): on the CPU when the last bucket was complete, on a GPU when its fence had
  // passed. The step's compute time, before any wait for the other ranks, ends here.
  double last_gradients_ready_at() const;
  // What the gradients are summed through (NCCL on GPUs, MPI otherwise): for the job's log.
  const Communicator& communicator() const { return comm_; }
  ReducerStats stats() const;
  // Whether this step's buckets are summed while the backward pass goes on (overlap on, and the
  // warm-up step done).
  bool overlapping() const { return thread_.joinable() && warmed_up_; }
  // Records each bucket's allreduce (on the thread that runs it) and synchronize()'s wait for the
  // buckets in flight (`dptrain train --trace`); null: nothing. Before the first step.
  void set_trace(TraceRecorder* trace) { trace_ = trace; }

 private:
  struct Bucket {
    std::vector<Parameter*> parameters;
    std::vector<std::size_t> offsets;  // of each parameter in `flat`, in elements
    std::size_t elements = 0;
    Tensor flat;
    std::size_t pending = 0;  // gradients not yet reported in this step
    // Passed once the backward's writes into `flat` are done on the device (null on the synchronous
    // CPU backend): the communication thread waits on it, never the backward pass.
    std::unique_ptr<Fence> ready;
  };
  // `thread`: where it runs, for the trace.
  void reduce(std::size_t bucket, TraceThread thread);
  void enqueue(std::size_t bucket);
  void mark_ready();  // a bucket's gradients are written (now)
  void run_thread();

  Backend& backend_;
  Communicator& comm_;
  Net* attached_ = nullptr;  // the net whose steps this reducer takes (attach())
  ReducerConfig config_;
  std::vector<Bucket> buckets_;
  std::unordered_map<const Parameter*, std::pair<std::size_t, std::size_t>> where_;  // bucket, index

  std::thread thread_;
  bool warmed_up_ = false;  // a step has been synchronised (the backward pass's thread only)
  mutable std::mutex mutex_;
  std::condition_variable work_, done_;
  std::deque<std::size_t> queue_;
  std::size_t reduced_ = 0;                  // buckets reduced in this step
  double ready_at_ = 0, last_ready_at_ = 0;  // this step's / the last step's (under mutex_)
  bool stopping_ = false;
  std::exception_ptr error_;
  ReducerStats stats_;
  TraceRecorder* trace_ = nullptr;
};

}  // namespace dptrain::distributed
