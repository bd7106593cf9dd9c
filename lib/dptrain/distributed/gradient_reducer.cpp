#include "dptrain/distributed/gradient_reducer.hpp"

#include <algorithm>
#include <chrono>

#include "dptrain/core/error.hpp"
#include "dptrain/distributed/bucket_plan.hpp"
#include "dptrain/net/net.hpp"

namespace dptrain::distributed {
namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

GradientReducer::GradientReducer(Backend& backend, Communicator& comm, std::vector<Parameter*> parameters,
                                 ReducerConfig config)
    : backend_(backend), comm_(comm), config_(config) {
  DPTRAIN_CHECK(config_.bucket_bytes > 0, "--bucket-mb must be positive");
  if (comm_.size() == 1) return;  // nothing to reduce
  // Reverse build order is the order the backward pass finishes gradients in.
  std::reverse(parameters.begin(), parameters.end());
  std::vector<std::size_t> elements;
  for (Parameter* p : parameters) {
    DPTRAIN_CHECK(p->grad.dtype() == DType::f32, "parameter ", p->name, ": the reducer sums f32 gradients");
    elements.push_back(static_cast<std::size_t>(p->grad.numel()));
  }
  const std::vector<std::size_t> bucket_of = assign_buckets(elements, config_.bucket_bytes);
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    Parameter* p = parameters[i];
    const std::size_t n = elements[i];
    if (buckets_.size() <= bucket_of[i]) buckets_.emplace_back();
    Bucket& b = buckets_.back();
    where_[p] = {buckets_.size() - 1, b.parameters.size()};
    b.parameters.push_back(p);
    b.offsets.push_back(b.elements);
    b.elements += n;
    stats_.bytes += static_cast<std::int64_t>(n * sizeof(float));
  }
  // Each gradient becomes a view into its bucket (its current values copied in): the backward pass
  // writes straight into the memory the allreduce sums in place, as Caffe's and llm.c's gradients
  // do, so there is no copy in and out per gradient and no second gradient-sized buffer per rank.
  for (Bucket& b : buckets_) {
    b.flat = backend_.allocate(Shape{static_cast<std::int64_t>(b.elements)}, DType::f32);
    b.pending = b.parameters.size();
    for (std::size_t i = 0; i < b.parameters.size(); ++i) {
      Parameter& p = *b.parameters[i];
      DPTRAIN_CHECK(p.grad.layout() == Layout::plain, "parameter ", p.name,
                    ": the reducer needs plain gradients, not a blocked layout");
      Tensor in_bucket = b.flat.view_bytes(b.offsets[i] * sizeof(float), p.grad.shape(), DType::f32, Layout::plain);
      backend_.copy(p.grad, in_bucket);
      p.grad = in_bucket;
    }
  }
  if (config_.overlap) thread_ = std::thread([this] { run_thread(); });
}

GradientReducer::~GradientReducer() {
  if (attached_ != nullptr) attached_->remove_step_hooks(*this);
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  thread_.join();
}

void GradientReducer::attach(Net& net) {
  DPTRAIN_CHECK(attached_ == nullptr, "gradient reducer: attached to a net already");
  net.add_step_hooks(*this);
  attached_ = &net;
}

void GradientReducer::gradient_ready(Parameter& parameter) {
  if (comm_.size() == 1) return;  // nothing to sum: the gradient is the mean already
  auto it = where_.find(&parameter);
  DPTRAIN_CHECK(it != where_.end(), "gradient reducer: parameter ", parameter.name, " is not one of the net's");
  Bucket& bucket = buckets_[it->second.first];
  DPTRAIN_CHECK(bucket.pending > 0, "gradient reducer: parameter ", parameter.name, " reported twice in one step");
  // The gradient is its bucket's memory (see the constructor): nothing to copy, unless the parameter's
  // gradient tensor was replaced since.
  const void* in_bucket = static_cast<const float*>(bucket.flat.raw()) + bucket.offsets[it->second.second];
  DPTRAIN_CHECK(parameter.grad.raw() == in_bucket, "gradient reducer: parameter ", parameter.name,
                "'s gradient is no longer the view into its bucket");
  if (--bucket.pending == 0) {
    bucket.ready = backend_.fence();
    if (!bucket.ready) mark_ready();  // synchronous: the gradients are written now
    if (overlapping()) enqueue(it->second.first);
  }
}

void GradientReducer::mark_ready() {
  const double now = now_seconds();
  std::lock_guard lock(mutex_);
  ready_at_ = std::max(ready_at_, now);
}

double GradientReducer::last_gradients_ready_at() const {
  std::lock_guard lock(mutex_);
  return last_ready_at_;
}

void GradientReducer::enqueue(std::size_t bucket) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(bucket);
  }
  work_.notify_one();
}

void GradientReducer::reduce(std::size_t index, TraceThread thread) {
  Bucket& bucket = buckets_[index];
  TraceSpan traced(trace_, TraceEvent::allreduce, thread, static_cast<int>(index));
  const double start = now_seconds();
  if (bucket.ready) {
    bucket.ready->wait();
    bucket.ready.reset();
    mark_ready();
  }
  comm_.allreduce_sum(bucket.flat.data<float>(), bucket.elements);
  const double seconds = now_seconds() - start;
  std::lock_guard lock(mutex_);
  stats_.communication_seconds += seconds;
}

void GradientReducer::run_thread() {
  for (;;) {
    std::size_t next = 0;
    {
      std::unique_lock lock(mutex_);
      work_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      next = queue_.front();
      queue_.pop_front();
    }
    try {
      reduce(next, TraceThread::communication);
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      ++reduced_;
    }
    done_.notify_all();
  }
}

void GradientReducer::synchronize() {
  if (comm_.size() == 1) return;
  for (const Bucket& b : buckets_) {
    if (b.pending == 0) continue;
    throw Error("gradient reducer: the backward pass did not report " + b.parameters[0]->name +
                " or another parameter of its bucket; every parameter must have a gradient each step");
  }
  const double start = now_seconds();
  if (overlapping()) {
    TraceSpan traced(trace_, TraceEvent::gradient_wait);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return reduced_ == buckets_.size(); });
    reduced_ = 0;
    if (error_) std::rethrow_exception(error_);
  } else {
    for (std::size_t b = 0; b < buckets_.size(); ++b) reduce(b, TraceThread::main);
  }
  const double waited = now_seconds() - start;
  warmed_up_ = true;
  // The sum becomes the mean in place: one scaling per bucket.
  const float scale = 1.f / static_cast<float>(comm_.size());
  for (Bucket& b : buckets_) {
    backend_.axpby(scale, b.flat, 0.f, b.flat);
    b.pending = b.parameters.size();
  }
  std::lock_guard lock(mutex_);
  stats_.exposed_seconds += waited;
  ++stats_.steps;
  last_ready_at_ = ready_at_;
  ready_at_ = 0;
}

ReducerStats GradientReducer::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace dptrain::distributed
