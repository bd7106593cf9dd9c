#pragma once
// The ops a layer may call. A layer never knows its device: it asks the Backend for a plan once per
// shape and runs the plan every step. cpu::OneDnnBackend and cuda::CudnnBackend are two tables of the
// same ops; all shape logic and bookkeeping above this line is written once.
//
// Plans may keep state between a training forward and the backward that follows it (oneDNN and cuDNN
// both want a workspace from max pooling and LRN), so run backward after the forward it belongs to.
//
// Adding an op touches these places (and no others):
//   1. backend/specs.hpp, specs.cpp: its spec struct and output-shape function.
//   2. here: its Plan class and its line in DPTRAIN_BACKEND_OPS (Backend::make_<op>, both backends'
//      factory declarations and forwarders come from that line).
//   3. backend/cpu/<op>.cpp (the oneDNN or host plan, and its factory cpu::make_<op>), the source in
//      lib/CMakeLists.txt.
//   4. backend/cuda/<op>.cpp (and a kernel in a .cu file if needed, and its factory cuda::make_<op>),
//      the source in cuda/CMakeLists.txt.
//   5. layers/<op>.hpp, .cpp (and the source in lib/CMakeLists.txt): shapes, parameters, and
//      what its backward reads (backward_reads_input / backward_reads_output, runs_in_place,
//      saved_state_bytes): the memory planner frees activations by them, so an under-declared read is
//      a wrong gradient. The defaults keep everything, which is safe.
//   6. tests: <op>_cases() and a naive reference in a tests/support/*_op_cases.cpp (op_cases.hpp): they
//      drive the reference, finite-difference, timing and (generated per op) GPU agreement checks.
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dptrain/backend/specs.hpp"
#include "dptrain/backend/tuned_choices.hpp"
#include "dptrain/core/host_memory.hpp"
#include "dptrain/core/input_format.hpp"
#include "dptrain/core/precision.hpp"
#include "dptrain/core/tensor.hpp"

namespace dptrain {

class ConvolutionPlan {
 public:
  virtual ~ConvolutionPlan() = default;
  virtual void forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y) = 0;
  virtual void backward_data(const Tensor& dy, const Tensor& weight, Tensor& dx) = 0;
  // `dbias` is ignored (may be undefined) when the spec has no bias.
  virtual void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dweight, Tensor& dbias) = 0;
};

class PoolingPlan {
 public:
  virtual ~PoolingPlan() = default;
  virtual void forward(const Tensor& x, Tensor& y, bool training) = 0;
  virtual void backward(const Tensor& dy, Tensor& dx) = 0;
};

class BatchNormPlan {
 public:
  virtual ~BatchNormPlan() = default;
  // Normalizes with the batch's statistics and returns them (mean and biased variance, per channel).
  virtual void forward_training(const Tensor& x, const Tensor& scale, const Tensor& shift, Tensor& y,
                                Tensor& batch_mean, Tensor& batch_variance) = 0;
  virtual void forward_inference(const Tensor& x, const Tensor& scale, const Tensor& shift, const Tensor& mean,
                                 const Tensor& variance, Tensor& y) = 0;
  // `shift` is not read by the math, but oneDNN 2.x requires it whenever the forward pass used one.
  // `y` is the training forward's output, read only with BatchNormSpec::fuse_relu_backward: `dy` is
  // then the fused ReLU's output gradient, masked here by y > 0.
  virtual void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& scale, const Tensor& shift,
                        const Tensor& batch_mean, const Tensor& batch_variance, Tensor& dx, Tensor& dscale,
                        Tensor& dshift) = 0;

  // A residual join, y = max(0, bn(x) + z), in the normalisation's own passes. Where joins_residual()
  // is false the layer composes it (this plan, then the backend's add_relu and a ReLU's backward) and
  // the three calls below are refused. backward_join writes g = y > 0 ? dy : 0 into dz (the residual's
  // gradient) and runs the normalisation's backward from g, in the same passes.
  virtual bool joins_residual() const { return false; }
  virtual void forward_training_join(const Tensor& x, const Tensor& z, const Tensor& scale, const Tensor& shift,
                                     Tensor& y, Tensor& batch_mean, Tensor& batch_variance);
  virtual void forward_inference_join(const Tensor& x, const Tensor& z, const Tensor& scale, const Tensor& shift,
                                      const Tensor& mean, const Tensor& variance, Tensor& y);
  virtual void backward_join(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& scale,
                             const Tensor& batch_mean, const Tensor& batch_variance, Tensor& dx, Tensor& dz,
                             Tensor& dscale, Tensor& dshift);
};

class ReluPlan {
 public:
  virtual ~ReluPlan() = default;
  virtual void forward(const Tensor& x, Tensor& y) = 0;  // may run in place (x and y the same memory)
  virtual void backward(const Tensor& y, const Tensor& dy, Tensor& dx) = 0;  // from the output
};

class LrnPlan {
 public:
  virtual ~LrnPlan() = default;
  virtual void forward(const Tensor& x, Tensor& y, bool training) = 0;
  virtual void backward(const Tensor& x, const Tensor& dy, Tensor& dx) = 0;
};

class ConcatPlan {  // along channels (axis 1)
 public:
  virtual ~ConcatPlan() = default;
  virtual void forward(std::span<const Tensor* const> inputs, Tensor& y) = 0;
  virtual void backward(const Tensor& dy, std::span<Tensor* const> dinputs) = 0;
};

class LinearPlan {
 public:
  virtual ~LinearPlan() = default;
  virtual void forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y) = 0;
  virtual void backward_data(const Tensor& dy, const Tensor& weight, Tensor& dx) = 0;
  virtual void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dweight, Tensor& dbias) = 0;
};

class SoftmaxCrossEntropyPlan {
 public:
  virtual ~SoftmaxCrossEntropyPlan() = default;
  // `loss` is a one-element tensor: the mean over the first `counted_rows` rows of the batch (the
  // rest pad a short final batch of an evaluation; every row gets its probabilities).
  // `probabilities` has the logits' shape. `correct` (two f32, exact integers) receives how many of
  // the counted rows have their label among the 1 and the min(5, classes) most probable classes, by
  // core/accuracy.hpp's rule: computed where the probabilities are, so that a step reads back a few
  // bytes instead of the probabilities.
  virtual void forward(const Tensor& logits, const Tensor& labels, Tensor& probabilities, Tensor& loss, Tensor& correct,
                       std::int64_t counted_rows) = 0;
  // d(loss_weight * loss)/d(logits).
  virtual void backward(const Tensor& probabilities, const Tensor& labels, float loss_weight, Tensor& dlogits) = 0;
};

class DropoutPlan {
 public:
  virtual ~DropoutPlan() = default;
  virtual void forward(const Tensor& x, Tensor& y, const RandomPosition& position) = 0;
  virtual void backward(const Tensor& dy, Tensor& dx) = 0;
};

// A point in a backend's queue of work. wait() blocks the calling thread until everything queued
// before the fence is done: the gradient reducer's communication thread waits on one before it sums a
// bucket the compute stream filled. The CPU backend works synchronously, so it has no fences.
class Fence {
 public:
  virtual ~Fence() = default;
  virtual void wait() = 0;
};

// A point in a backend's queue of work whose time is known once the work before it is done.
class TimeMark {
 public:
  virtual ~TimeMark() = default;
  // Milliseconds from `earlier` (a mark of the same backend, made before this one) to this mark;
  // waits for the work queued before this mark.
  virtual double milliseconds_since(const TimeMark& earlier) = 0;
};

// Moves the next batch's images to the device while the current step computes. stage() starts the
// transfer of a host batch (a GPU copies it into page-locked memory and from there on a copy stream);
// finish() makes the work queued after it see the staged images in `images` (converted to the
// activation type, and normalised first when the batches are u8: see InputFormat). One batch in
// flight: stage, finish, stage, finish...
class InputStager {
 public:
  virtual ~InputStager() = default;
  virtual void stage(const Tensor& host_images) = 0;
  virtual void finish(Tensor& images) = 0;
};

// Every op a backend hands out, once: X(name, Plan, (parameters), (arguments)). Backend::make_<name>,
// both backends' factory declarations (cpu/plans.hpp, cuda/plans.hpp: make_<name>(context,
// parameters...)) and their make_<name> overrides are generated from it, and the GPU agreement test
// checks at compile time that it has a case for each. A backend that lacks a factory fails to link, and
// one whose class lacks an override cannot be instantiated.
#define DPTRAIN_BACKEND_OPS(X)                                                                             \
  X(convolution, ConvolutionPlan, (const ConvolutionSpec& spec), (spec))                                   \
  X(pooling, PoolingPlan, (const PoolingSpec& spec), (spec))                                               \
  X(batch_norm, BatchNormPlan, (const BatchNormSpec& spec), (spec))                                        \
  X(relu, ReluPlan, (const Shape& shape, const std::string& who = "relu"), (shape, who))                   \
  X(lrn, LrnPlan, (const LrnSpec& spec), (spec))                                                           \
  X(concat, ConcatPlan, (std::span<const Shape> inputs, const std::string& who = "concat"), (inputs, who)) \
  X(linear, LinearPlan, (const LinearSpec& spec), (spec))                                                  \
  X(softmax_cross_entropy, SoftmaxCrossEntropyPlan, (const SoftmaxCrossEntropySpec& spec), (spec))         \
  X(dropout, DropoutPlan, (const DropoutSpec& spec), (spec))

// The parameter list of an op without its parentheses, for a factory that takes a context first.
#define DPTRAIN_OP_PARAMETERS(...) __VA_ARGS__

// One parameter of an SGD step: its value, gradient and momentum buffer (f32, one element count and
// layout) and its weight decay (0 for biases and batch-norm parameters unless SgdConfig::decay_all).
struct SgdTensors {
  Tensor* weight = nullptr;
  const Tensor* grad = nullptr;
  Tensor* velocity = nullptr;
  float weight_decay = 0.f;
};

// Host copies of device tensors, queued and not yet waited for (Backend::start_to_host_together).
class PendingRead {
 public:
  virtual ~PendingRead() = default;
  // Waits for the copies, once, and returns the host tensors in the order they were asked for.
  virtual std::vector<Tensor> wait() = 0;
};

// Copies already made (a backend whose memory is the host's).
class ReadyRead final : public PendingRead {
 public:
  explicit ReadyRead(std::vector<Tensor> host) : host_(std::move(host)) {}
  std::vector<Tensor> wait() override { return std::move(host_); }

 private:
  std::vector<Tensor> host_;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual Device device() const = 0;
  // The arithmetic of activations (allocate_activation's element type); parameters stay f32.
  virtual Precision precision() const { return Precision::fp32; }
  // Whether convolution plans honour ConvolutionSpec::accumulate_input_gradient.
  virtual bool accumulates_convolution_input_gradient() const { return false; }

  // make_<op> for every op of DPTRAIN_BACKEND_OPS.
#define DPTRAIN_DECLARE_MAKE(name, Plan, params, args) virtual std::unique_ptr<Plan> make_##name params = 0;
  DPTRAIN_BACKEND_OPS(DPTRAIN_DECLARE_MAKE)
#undef DPTRAIN_DECLARE_MAKE

  // Memory on this backend's device, plain layout.
  virtual Tensor allocate(Shape shape, DType dtype = DType::f32) = 0;
  // The same, filled with zeros. On the host the zeros come from the allocator (fresh pages of a large
  // block cost nothing until touched), so a net built only to read its shapes (`dptrain import`'s
  // probes) commits no memory for its parameters.
  virtual Tensor allocate_zeros(Shape shape, DType dtype = DType::f32) {
    Tensor t = allocate(std::move(shape), dtype);
    fill(t, 0.f);
    return t;
  }
  // An activation or activation gradient (of dtype activation_dtype(precision())), in the layout this backend's kernels
  // read fastest (nChw16c or nChw8c where possible on the CPU). The layers' plans accept any layout; this one costs no
  // reorder.
  virtual Tensor allocate_activation(Shape shape) = 0;
  // The layout allocate_activation gives a tensor of this shape (for activations placed in an arena).
  virtual Layout activation_layout(const Shape& /*shape*/) const { return Layout::plain; }
  // A batch's images as the first layer reads them: of the activation type, plain on the CPU (the
  // loader's batch is used where it lies), in the activation layout on the GPU (NHWC in 16 bits), where
  // the input stager and copy_from_host transpose on the device.
  virtual Tensor allocate_input(Shape shape) { return allocate(std::move(shape), activation_dtype(precision())); }
  // A host copy, plain layout; a bf16/f16 tensor comes back as f32 (the host never computes in 16 bits).
  // The device memory this process can still allocate (free, plus what its caching allocator holds
  // unused), or nullopt for a backend whose memory is the host's (the CPU).
  virtual std::optional<std::size_t> device_memory_free() { return std::nullopt; }
  virtual Tensor to_host(const Tensor& t) = 0;
  // Several small tensors at once, with one wait for the device instead of one each: what a step
  // reads back (its losses and top-k counts). Started now, taken later: the copies are queued behind
  // the work already queued, and PendingRead::wait() returns their values as of that point, however
  // much work was queued after it (the next step, which overwrites the tensors). A backend whose
  // memory is the host's reads at once. A PendingRead must not outlive its backend.
  virtual std::unique_ptr<PendingRead> start_to_host_together(std::span<const Tensor* const> tensors) {
    std::vector<Tensor> host;
    for (const Tensor* t : tensors) host.push_back(to_host(*t));
    return std::make_unique<ReadyRead>(std::move(host));
  }
  std::vector<Tensor> to_host_together(std::span<const Tensor* const> tensors) {
    return start_to_host_together(tensors)->wait();
  }
  // From a plain host tensor of t's element type, or from f32 into a bf16/f16 tensor (converted).
  virtual void copy_from_host(const Tensor& host, Tensor& t) = 0;

  // Element-wise ops on tensors of this device (same element count and layout; copy also converts
  // between layouts).
  virtual void fill(Tensor& t, float value) = 0;
  virtual void copy(const Tensor& src, Tensor& dst) = 0;
  virtual void add(const Tensor& a, const Tensor& b, Tensor& y) = 0;            // y = a + b
  virtual void add_relu(const Tensor& a, const Tensor& b, Tensor& y) = 0;       // y = max(a + b, 0)
  virtual void axpby(float alpha, const Tensor& x, float beta, Tensor& y) = 0;  // y = alpha x + beta y
  // One SGD step on every parameter of the list (fp32), in one pass (one kernel launch on a GPU, not
  // one per parameter): per element, with the parameter's own decay wd,
  // g' = g + wd w; v = m v + g'; w -= lr (nesterov ? g' + m v : v).
  // Every parameter's tensors are checked before any is written.
  virtual void sgd_update_all(std::span<const SgdTensors> parameters, const SgdHyper& hyper) = 0;

  // Multiplies every tensor (f32) by `factor` and tells whether all their elements are finite, in one
  // host read: the loss scaler's unscale-and-check of the reduced gradients.
  virtual bool scale_and_check_finite(std::span<Tensor* const> tensors, float factor) = 0;

  // A fence after the work queued so far; nullptr when the backend finishes every op before it returns.
  virtual std::unique_ptr<Fence> fence() { return nullptr; }
  // For input batches of `shape` (plain host tensors of `format.host`: f32, or u8 that the stager
  // normalises with `format.normalisation`).
  virtual std::unique_ptr<InputStager> make_input_stager(const Shape& shape, const InputFormat& format) = 0;
  // The batch element type this backend stages best: u8 on a GPU (it normalises on the device),
  // f32 on the CPU (the host normalises anyway).
  virtual DType input_batch_type() const { return DType::f32; }
  // Where the loader should put the batches this backend stages: page-locked memory on a GPU (the
  // stager then copies from it to the device directly, with no host copy first), plain memory on the
  // CPU.
  virtual HostMemory batch_memory() const { return pageable_host_memory(); }

  // The device's practical fp32 peak in GFLOP/s, measured now with a large matrix multiply (oneDNN's
  // sgemm, cuBLAS's SGEMM): the reference a benchmark's efficiency is a ratio to.
  virtual double measure_peak_gflops() = 0;

  // Choices made by measuring (tuned_choices.hpp): this backend's as text, for rank 0 to share and a
  // checkpoint to keep ("" where nothing is measured, the CPU); and choices made elsewhere, taken in
  // place of this backend's own from the next use of each op on, when they were made on the same
  // kind of device with the same library versions and policy (refused with the reason otherwise).
  virtual std::string tuned_choices() const { return {}; }
  virtual AdoptedChoices adopt_tuned_choices(const std::string& /*text*/) {
    return {0, "the " + name() + " backend chooses nothing by measuring"};
  }
  virtual AlgorithmSearchStats algorithm_search() const { return {}; }
  // After the second training step, when every op has made its choices and run the ones a run takes
  // from rank 0 or a checkpoint: gives back the memory only the searches needed (on a GPU, the workspace beyond what
  // the chosen algorithms use, and the allocator's cached blocks). Later searches (another net's) still work; they grow
  // it again.
  virtual void release_search_memory() {}
  // Every convolution search made so far, in the order made (empty where nothing is searched).
  virtual std::vector<ConvolutionSearch> convolution_searches() const { return {}; }

  // A mark in this backend's queue of work, for timing it (`dptrain bench --layers`): the time
  // between two marks is the device's time for the work queued between them. The host clock where
  // every op finishes before it returns (the CPU); CUDA events on a GPU.
  virtual std::unique_ptr<TimeMark> time_mark();
};

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace dptrain
