// The CUDA backend's table of ops. Every op is queued on the context's one compute stream; only
// to_host (and measure_peak_gflops) wait for the device. In bf16/fp16 activations are of that type and
// the element-wise ops take them as well as f32 tensors (fp32 arithmetic); parameters stay f32.
#include "dptrain/backend/cuda/cuda_backend.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "dptrain/backend/cuda/device_query.hpp"
#include "dptrain/backend/cuda/input_stager.hpp"
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/layout_kernels.hpp"
#include "dptrain/backend/cuda/plans.hpp"
#include "dptrain/backend/cuda/precision_kernels.hpp"
#include "dptrain/backend/cuda/readback.hpp"
#include "dptrain/backend/cuda/sgd_table.hpp"
#include "dptrain/backend/cuda/streams.hpp"

namespace dptrain::cuda {
namespace {
class CudaFence final : public Fence {
 public:
  // The communication thread waits on it for most of a backward pass: a blocking-sync event, so it
  // sleeps rather than spins.
  CudaFence(cudaStream_t stream, int device) : device_(device), event_(true) { event_.record(stream); }
  // Waited on (and then destroyed) by the gradient reducer's communication thread, whose current
  // device is 0 unless set: make ours current first, or the runtime would create a context on GPU 0
  // for that thread (a rank on cuda:N, N > 0, would then hold memory on GPU 0).
  void wait() override {
    DPTRAIN_CUDA_CHECK(cudaSetDevice(device_));
    event_.synchronize();
  }

 private:
  int device_;
  Event event_;
};

// A timing event on the compute stream (`dptrain bench --layers`): the GPU's clock when the stream
// reached it, so the time between two marks is the device's time for the work queued between them
// (with any gap where the GPU waited for the host to queue more).
class CudaTimeMark final : public TimeMark {
 public:
  explicit CudaTimeMark(cudaStream_t stream) {
    DPTRAIN_CUDA_CHECK(cudaEventCreate(&event_));
    const cudaError_t recorded = cudaEventRecord(event_, stream);
    if (recorded != cudaSuccess) {
      cudaEventDestroy(event_);
      DPTRAIN_CUDA_CHECK(recorded);
    }
  }
  ~CudaTimeMark() override { cudaEventDestroy(event_); }
  CudaTimeMark(const CudaTimeMark&) = delete;
  CudaTimeMark& operator=(const CudaTimeMark&) = delete;
  double milliseconds_since(const TimeMark& earlier) override {
    const auto& start = dynamic_cast<const CudaTimeMark&>(earlier);
    DPTRAIN_CUDA_CHECK(cudaEventSynchronize(event_));
    float ms = 0;
    DPTRAIN_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, Precision precision, bool deterministic)
      : ctx_(std::make_shared<CudaContext>(device, activation_dtype(precision))),
        precision_(precision),
        fingerprint_(tuning_fingerprint(ctx_->device(), deterministic)) {
    ctx_->algorithm_cache().set_deterministic(deterministic);
    if (precision == Precision::bf16) {
      // bf16 arithmetic (and cuDNN's bf16 convolutions) need compute capability 8.0 (Ampere) or newer.
      int major = 0;
      DPTRAIN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ctx_->device()));
      DPTRAIN_CHECK(major >= 8,
                    "--precision bf16 needs a GPU of compute capability 8.0 or newer (Ampere); cuda:", ctx_->device(),
                    " is ", major, ".x: use --precision fp16 or fp32");
    }
  }
  ~CudaBackend() override { cudaStreamSynchronize(ctx_->stream()); }

  std::string name() const override {
    std::string libraries = "cuDNN, cuBLAS";
    if (precision_ != Precision::fp32) libraries += ", " + std::string(name_of(precision_));
    if (ctx_->nhwc()) libraries += ", NHWC";  // the activations' layout, where it is not NCHW
    return "cuda:" + std::to_string(ctx_->device()) + " (" + libraries + ")";
  }
  Device device() const override { return Device::cuda(ctx_->device()); }
  Precision precision() const override { return precision_; }
  bool accumulates_convolution_input_gradient() const override { return true; }  // cuDNN's beta

  // make_<op> for every op of DPTRAIN_BACKEND_OPS: this backend's factory of that op.
#define DPTRAIN_FORWARD_MAKE(name, Plan, params, args) \
  std::unique_ptr<Plan> make_##name params override { return cuda::make_##name(ctx_, DPTRAIN_OP_PARAMETERS args); }
  DPTRAIN_BACKEND_OPS(DPTRAIN_FORWARD_MAKE)
#undef DPTRAIN_FORWARD_MAKE

  Tensor allocate(Shape shape, DType dtype) override { return ctx_->allocate(shape, dtype); }
  Tensor allocate_activation(Shape shape) override { return ctx_->allocate_activation(shape); }
  Layout activation_layout(const Shape& shape) const override { return ctx_->activation_layout(shape); }
  Tensor allocate_input(Shape shape) override { return ctx_->allocate_activation(shape); }

  // Always a plain host tensor: bf16/f16 come back as f32, widened on the device (the host never
  // computes in 16 bits), and NHWC comes back NCHW, transposed on the device in the same pass.
  Tensor to_host(const Tensor& t) override {
    check_here(t, "to_host");
    Tensor staged;
    const Tensor* source = &t;
    if (is_16_bit(t.dtype()) || t.layout() != Layout::plain) {
      const DType wide = is_16_bit(t.dtype()) ? DType::f32 : t.dtype();
      staged = ctx_->allocate(t.shape(), wide);
      copy_across_layouts(t, staged);
      source = &staged;
    }
    Tensor host = Tensor::empty(source->shape(), source->dtype());
    if (source->bytes()) {
      DPTRAIN_CUDA_CHECK(
          cudaMemcpyAsync(host.raw(), source->raw(), source->bytes(), cudaMemcpyDeviceToHost, ctx_->stream()));
    }
    DPTRAIN_CUDA_CHECK(cudaStreamSynchronize(ctx_->stream()));
    return host;
  }
  std::optional<std::size_t> device_memory_free() override { return ctx_->available_for_workspace(); }
  // Plain f32 tensors are copied into one page-locked slot, each copy queued without a wait, and
  // waited for once, when the caller takes them; any other tensor takes to_host's way.
  std::unique_ptr<PendingRead> start_to_host_together(std::span<const Tensor* const> tensors) override {
    for (const Tensor* t : tensors) check_here(*t, "to_host_together");
    return readbacks_.start(tensors, [this](const Tensor& t) { return to_host(t); });
  }
  void copy_from_host(const Tensor& host, Tensor& t) override {
    DPTRAIN_CHECK(host.device().is_cpu() && host.layout() == Layout::plain,
                  "copy_from_host: the source must be a plain host tensor");
    check_here(t, "copy_from_host");
    const bool narrow = host.dtype() == DType::f32 && is_16_bit(t.dtype());
    if (narrow || t.layout() != Layout::plain) {
      DPTRAIN_CHECK(host.numel() == t.numel() && (narrow || host.dtype() == t.dtype()), "copy_from_host: tensors of ",
                    "shapes ", host.shape().to_string(), " (", name_of(host.dtype()), ") and ", t.shape().to_string(),
                    " (", name_of(t.dtype()), ") differ");
      // Through a plain device buffer, narrowed and transposed on the device; the buffer goes back to
      // the caching allocator at once and is reused only by work queued after the conversion.
      Tensor plain = ctx_->allocate(t.shape(), host.dtype());
      if (t.numel()) {
        DPTRAIN_CUDA_CHECK(
            cudaMemcpyAsync(plain.raw(), host.raw(), plain.bytes(), cudaMemcpyHostToDevice, ctx_->stream()));
      }
      copy_across_layouts(plain, t);
      return;
    }
    check_same(host, t, "copy_from_host");
    // From pageable memory the call returns once the data is staged, so the caller may reuse `host`.
    if (t.bytes()) {
      DPTRAIN_CUDA_CHECK(cudaMemcpyAsync(t.raw(), host.raw(), t.bytes(), cudaMemcpyHostToDevice, ctx_->stream()));
    }
  }

  void fill(Tensor& t, float value) override {
    check_floating(t, "fill");
    kernels::fill(t.raw(), t.dtype(), t.numel(), value, ctx_->stream());
  }
  // Same element type and layout: a device copy. Between f32, bf16 and f16, or between NCHW and NHWC
  // (tensors of one shape): a conversion.
  void copy(const Tensor& src, Tensor& dst) override {
    check_here(src, "copy");
    check_here(dst, "copy");
    if (src.layout() != dst.layout() && src.shape() == dst.shape() && is_floating(src.dtype()) &&
        is_floating(dst.dtype())) {
      copy_across_layouts(src, dst);
      return;
    }
    if (src.dtype() != dst.dtype() && is_floating(src.dtype()) && is_floating(dst.dtype()) &&
        src.numel() == dst.numel() && src.layout() == dst.layout()) {
      kernels::convert(src.raw(), src.dtype(), dst.raw(), dst.dtype(), src.numel(), ctx_->stream());
      return;
    }
    check_same(src, dst, "copy");
    if (src.raw() != dst.raw() && src.bytes()) {
      DPTRAIN_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), src.bytes(), cudaMemcpyDeviceToDevice, ctx_->stream()));
    }
  }
  void add(const Tensor& a, const Tensor& b, Tensor& y) override { sum(a, b, y, false, "add"); }
  void add_relu(const Tensor& a, const Tensor& b, Tensor& y) override { sum(a, b, y, true, "add_relu"); }
  void axpby(float alpha, const Tensor& x, float beta, Tensor& y) override {
    check_floating(x, "axpby");
    check_floating(y, "axpby");
    check_same(x, y, "axpby");
    kernels::axpby(alpha, x.raw(), beta, y.raw(), y.dtype(), y.numel(), ctx_->stream());
  }
  void sgd_update_all(std::span<const SgdTensors> parameters, const SgdHyper& hyper) override {
    sgd_table_.update(*ctx_, parameters, hyper);
  }

  bool scale_and_check_finite(std::span<Tensor* const> tensors, float factor) override {
    if (!nonfinite_.defined()) nonfinite_ = ctx_->allocate(Shape{1}, DType::i32);
    DPTRAIN_CUDA_CHECK(cudaMemsetAsync(nonfinite_.raw(), 0, sizeof(int), ctx_->stream()));
    int* flag = static_cast<int*>(nonfinite_.raw());
    for (Tensor* t : tensors) {
      check_float(*t, "scale_and_check_finite");
      kernels::scale_and_flag_nonfinite(device_floats(*t), t->numel(), factor, flag, ctx_->stream());
    }
    int host_flag = 0;
    DPTRAIN_CUDA_CHECK(cudaMemcpyAsync(&host_flag, flag, sizeof host_flag, cudaMemcpyDeviceToHost, ctx_->stream()));
    DPTRAIN_CUDA_CHECK(cudaStreamSynchronize(ctx_->stream()));
    return host_flag == 0;
  }

  std::unique_ptr<Fence> fence() override { return std::make_unique<CudaFence>(ctx_->stream(), ctx_->device()); }
  std::unique_ptr<InputStager> make_input_stager(const Shape& shape, const InputFormat& format) override {
    return cuda::make_input_stager(ctx_, shape, format);
  }
  // The loader hands over cropped bytes; the stager normalises them on the device.
  DType input_batch_type() const override { return DType::u8; }
  // The loader fills page-locked buffers, which the stager copies from on its copy stream directly.
  HostMemory batch_memory() const override { return cuda::page_locked_host_memory(ctx_->device()); }

  // Best of several cuBLAS SGEMMs (FMA math, no TF32: the fp32 peak), timed with events on our stream.
  double measure_peak_gflops() override {
    constexpr int n = 4096;
    const Shape square{n, n};
    Tensor a = allocate(square, DType::f32), b = allocate(square, DType::f32), c = allocate(square, DType::f32);
    kernels::fill(device_floats(a), a.numel(), 0.5f, ctx_->stream());
    kernels::fill(device_floats(b), b.numel(), 0.25f, ctx_->stream());
    cudaEvent_t start = nullptr, stop = nullptr;
    DPTRAIN_CUDA_CHECK(cudaEventCreate(&start));
    DPTRAIN_CUDA_CHECK(cudaEventCreate(&stop));
    double best = 0;
    try {
      const float one = 1.f, zero = 0.f;
      for (int rep = 0; rep < 6; ++rep) {
        DPTRAIN_CUDA_CHECK(cudaEventRecord(start, ctx_->stream()));
        DPTRAIN_CUBLAS_CHECK(cublasSgemm(ctx_->cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, device_floats(a), n,
                                         device_floats(b), n, &zero, device_floats(c), n));
        DPTRAIN_CUDA_CHECK(cudaEventRecord(stop, ctx_->stream()));
        DPTRAIN_CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        DPTRAIN_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (rep > 0 && ms > 0) best = std::max(best, 2.0 * n * n * static_cast<double>(n) / (ms * 1e-3) / 1e9);
      }
    } catch (...) {
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
      throw;
    }
    DPTRAIN_CUDA_CHECK(cudaEventDestroy(start));
    DPTRAIN_CUDA_CHECK(cudaEventDestroy(stop));
    return best;
  }

  std::string tuned_choices() const override { return ctx_->algorithm_cache().to_text(fingerprint_); }
  AdoptedChoices adopt_tuned_choices(const std::string& text) override {
    return ctx_->algorithm_cache().adopt(text, fingerprint_);
  }
  AlgorithmSearchStats algorithm_search() const override { return ctx_->algorithm_cache().stats(); }
  void release_search_memory() override { ctx_->shrink_workspace(ctx_->algorithm_cache().largest_workspace()); }
  std::vector<ConvolutionSearch> convolution_searches() const override { return ctx_->algorithm_cache().searches(); }
  std::unique_ptr<TimeMark> time_mark() override { return std::make_unique<CudaTimeMark>(ctx_->stream()); }

  CudaContext& context() { return *ctx_; }
  std::int64_t sgd_table_builds() const { return sgd_table_.builds(); }

 private:
  // y = a + b, and max(., 0) with `relu` (the residual join with its ReLU fused, one pass).
  void sum(const Tensor& a, const Tensor& b, Tensor& y, bool relu, const char* op) {
    check_floating(a, op);
    check_floating(b, op);
    check_floating(y, op);
    check_same(a, y, op);
    check_same(b, y, op);
    kernels::add(a.raw(), b.raw(), y.raw(), y.dtype(), y.numel(), relu, ctx_->stream());
  }
  void check_here(const Tensor& t, const char* op) const {
    DPTRAIN_CHECK(t.device() == Device::cuda(ctx_->device()), op, ": a tensor in ", t.device().to_string(),
                  " memory was given to the backend of cuda:", ctx_->device());
    DPTRAIN_CHECK(t.layout() == Layout::plain || t.layout() == Layout::nhwc, op,
                  ": the CUDA backend keeps tensors in the plain (NCHW) or NHWC layout, not ", layout_name(t.layout()));
  }
  // dst = src for two floating tensors of one shape, in any of their types and layouts (one pass).
  void copy_across_layouts(const Tensor& src, Tensor& dst) {
    DPTRAIN_CHECK(src.shape() == dst.shape(), "copy: tensors of shapes ", src.shape().to_string(), " and ",
                  dst.shape().to_string(), " differ");
    if (src.layout() == dst.layout() || src.numel() == 0) {
      kernels::convert(src.raw(), src.dtype(), dst.raw(), dst.dtype(), src.numel(), ctx_->stream());
      return;
    }
    const Shape& s = src.shape();
    const std::int64_t plane = s[2] * s[3];
    if (src.layout() == Layout::plain) {
      kernels::transpose_samples(src.raw(), src.dtype(), dst.raw(), dst.dtype(), s[0], s[1], plane, ctx_->stream());
    } else {
      kernels::transpose_samples(src.raw(), src.dtype(), dst.raw(), dst.dtype(), s[0], plane, s[1], ctx_->stream());
    }
  }
  void check_float(const Tensor& t, const char* op) const {
    check_here(t, op);
    DPTRAIN_CHECK(t.dtype() == DType::f32, op, ": needs f32 tensors, not ", name_of(t.dtype()));
  }
  // f32, or an activation type (bf16, f16).
  void check_floating(const Tensor& t, const char* op) const {
    check_here(t, op);
    DPTRAIN_CHECK(is_floating(t.dtype()), op, ": needs f32, bf16 or f16 tensors, not ", name_of(t.dtype()));
  }
  static bool is_16_bit(DType type) { return type == DType::bf16 || type == DType::f16; }
  static bool is_floating(DType type) { return type == DType::f32 || is_16_bit(type); }
  // Element-wise ops run in memory order, so the tensors must share their layout as well as their size.
  static void check_same(const Tensor& a, const Tensor& b, const char* op) {
    DPTRAIN_CHECK(a.numel() == b.numel() && a.dtype() == b.dtype(), op, ": tensors of shapes ", a.shape().to_string(),
                  " (", name_of(a.dtype()), ") and ", b.shape().to_string(), " (", name_of(b.dtype()), ") differ");
    DPTRAIN_CHECK(a.layout() == b.layout() || (same_as_plain(a) && same_as_plain(b)), op, ": tensors of shapes ",
                  a.shape().to_string(), " and ", b.shape().to_string(), " are in different ", "layouts (",
                  layout_name(a.layout()), " and ", layout_name(b.layout()), ")");
  }
  // A tensor laid out exactly as its plain version: plain, or NHWC with one pixel per channel.
  static bool same_as_plain(const Tensor& t) {
    return t.layout() == Layout::plain || (t.shape().rank() == 4 && t.shape()[2] * t.shape()[3] == 1);
  }

  CudaContextPtr ctx_;
  Precision precision_;
  std::string fingerprint_;    // what the algorithm choices are valid for (tuning_fingerprint)
  Tensor nonfinite_;           // the overflow flag of scale_and_check_finite
  Readbacks readbacks_{ctx_};  // start_to_host_together's page-locked slots
  SgdTable sgd_table_;         // sgd_update_all's device table, kept while the parameter list is the same
};

CudaBackend& as_cuda(Backend& backend) {
  auto* found = dynamic_cast<CudaBackend*>(&backend);
  DPTRAIN_CHECK(found != nullptr, "backend '", backend.name(), "' is not a CUDA backend");
  return *found;
}
}  // namespace

MemoryStats memory_stats(Backend& backend) { return as_cuda(backend).context().allocator().stats(); }
std::int64_t sgd_table_builds(Backend& backend) { return as_cuda(backend).sgd_table_builds(); }

}  // namespace dptrain::cuda

namespace dptrain {
std::unique_ptr<Backend> make_cuda_backend(int device, Precision precision, bool deterministic) {
  return std::make_unique<cuda::CudaBackend>(device, precision, deterministic);
}
}  // namespace dptrain
