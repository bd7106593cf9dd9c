// The CPU backend: oneDNN primitives for the compute-heavy ops, plain loops for the rest.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "dptrain/backend/cpu/plans.hpp"

namespace dptrain::cpu {
namespace {
void check_same_size(const Tensor& a, const Tensor& b, const char* op) {
  DPTRAIN_CHECK(a.numel() == b.numel(), op, ": tensors of shapes ", a.shape().to_string(), " and ",
                b.shape().to_string(), " differ in size");
  DPTRAIN_CHECK(a.device().is_cpu() && b.device().is_cpu(), op, ": the CPU backend needs host tensors");
}

// Element-wise loops over large tensors run on the OpenMP threads oneDNN uses: every element is
// computed the same way whatever the split, so the results are the same bits with any thread count.
// Small tensors stay on the calling thread (a parallel region costs microseconds).
constexpr std::int64_t kParallelElements = std::int64_t{1} << 15;

// body(i) for i in [0, count), in parallel from `parallel_from` iterations on.
template <typename Body>
void for_each_element(std::int64_t count, Body&& body, std::int64_t parallel_from = kParallelElements) {
#if DPTRAIN_HAVE_OPENMP
#pragma omp parallel for schedule(static) if (count >= parallel_from)
  for (std::int64_t i = 0; i < count; ++i) body(i);
#else
  (void)parallel_from;
  for (std::int64_t i = 0; i < count; ++i) body(i);
#endif
}

// Whether every element of p[0, count) is finite.
bool all_finite(const float* p, std::int64_t count) {
  bool finite = true;
#if DPTRAIN_HAVE_OPENMP
#pragma omp parallel for schedule(static) reduction(&& : finite) if (count >= kParallelElements)
#endif
  for (std::int64_t i = 0; i < count; ++i) finite = finite && std::isfinite(p[i]);
  return finite;
}

// Element-wise ops run on memory order, which is only meaningful when both tensors share a layout.
void check_same_layout(const Tensor& a, const Tensor& b, const char* op) {
  check_same_size(a, b, op);
  DPTRAIN_CHECK(a.layout() == b.layout(), op, ": tensors of shape ", a.shape().to_string(),
                " are in different layouts (plain and blocked)");
}

// A run of consecutive elements of one parameter: what one iteration of the SGD loop updates.
struct SgdPiece {
  float* w;
  const float* g;
  float* v;
  std::int64_t count;
  float weight_decay;
};

// The parameters cut into pieces of at most kSgdPiece elements (every tensor checked first), so that
// one loop over all of them shares the threads evenly however the sizes are spread.
std::vector<SgdPiece> sgd_pieces(std::span<const SgdTensors> parameters) {
  constexpr std::int64_t kSgdPiece = std::int64_t{1} << 13;
  std::vector<SgdPiece> pieces;
  for (const SgdTensors& p : parameters) {
    DPTRAIN_CHECK(p.weight != nullptr && p.grad != nullptr && p.velocity != nullptr,
                  "sgd_update_all: a parameter lacks a tensor");
    check_same_layout(*p.weight, *p.grad, "sgd_update_all");
    check_same_layout(*p.weight, *p.velocity, "sgd_update_all");
    DPTRAIN_CHECK(p.weight->dtype() == DType::f32 && p.grad->dtype() == DType::f32 && p.velocity->dtype() == DType::f32,
                  "sgd_update_all: needs f32 tensors");
  }
  for (const SgdTensors& p : parameters) {
    float* w = p.weight->elements<float>();
    const float* g = p.grad->elements<float>();
    float* v = p.velocity->elements<float>();
    for (std::int64_t at = 0; at < p.weight->numel(); at += kSgdPiece) {
      pieces.push_back({w + at, g + at, v + at, std::min(kSgdPiece, p.weight->numel() - at), p.weight_decay});
    }
  }
  return pieces;
}

// Best of several runs of a square sgemm large enough to be compute-bound (2 * n^3 flops each).
double measure_sgemm_gflops() {
  constexpr dnnl_dim_t n = 1536;
  Tensor a = Tensor::empty(Shape{n, n}), b = Tensor::empty(Shape{n, n}), c = Tensor::zeros(Shape{n, n});
  for (dnnl_dim_t i = 0; i < n * n; ++i) {
    a.data<float>()[i] = static_cast<float>(i % 7) * 0.1f;
    b.data<float>()[i] = static_cast<float>(i % 5) * 0.1f;
  }
  double best = 0;
  for (int rep = 0; rep < 10; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    DPTRAIN_DNNL_CHECK(
        dnnl_sgemm('N', 'N', n, n, n, 1.f, a.data<float>(), n, b.data<float>(), n, 0.f, c.data<float>(), n));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rep > 0) best = std::max(best, 2.0 * n * n * n / seconds / 1e9);  // the first run warms up
  }
  return best;
}

// On the CPU the batch is already where the compute reads it: stage() keeps a reference to the host
// batch, finish() copies it into the net's input (converting to the blocked layout if that is used).
// u8 batches are normalised on the host first (normalise_planes, the reference for a GPU's kernel).
class HostInputStager final : public InputStager {
 public:
  HostInputStager(Backend& backend, Shape shape, InputFormat format)
      : backend_(backend), shape_(std::move(shape)), format_(std::move(format)) {
    check_input_format(format_, shape_, "input stager");
  }
  void stage(const Tensor& host_images) override {
    check_shape(host_images, shape_, "input stager", "batch");
    DPTRAIN_CHECK(
        host_images.device().is_cpu() && host_images.layout() == Layout::plain && host_images.dtype() == format_.host,
        "input stager: the batch must be a plain ", name_of(format_.host), " host tensor, not ",
        name_of(host_images.dtype()));
    staged_ = host_images;
  }
  void finish(Tensor& images) override {
    DPTRAIN_CHECK(staged_.defined() && staged_.numel() > 0, "input stager: finish() without a staged batch");
    if (format_.host == DType::u8) {
      if (!normalised_.defined()) normalised_ = Tensor::empty(shape_, DType::f32);
      normalise_planes(staged_.data<std::uint8_t>(), normalised_.data<float>(), shape_[0], shape_[2] * shape_[3],
                       format_.normalisation);
      backend_.copy_from_host(normalised_, images);
    } else {
      backend_.copy_from_host(staged_, images);
    }
    staged_ = Tensor();
  }

 private:
  Backend& backend_;
  Shape shape_;
  InputFormat format_;
  Tensor staged_, normalised_;
};

class OneDnnBackend final : public Backend {
 public:
  std::string name() const override { return "cpu (oneDNN)"; }
  Device device() const override { return Device::cpu(); }

  // make_<op> for every op of DPTRAIN_BACKEND_OPS: this backend's factory of that op.
#define DPTRAIN_FORWARD_MAKE(name, Plan, params, args) \
  std::unique_ptr<Plan> make_##name params override { return cpu::make_##name(ctx_, DPTRAIN_OP_PARAMETERS args); }
  DPTRAIN_BACKEND_OPS(DPTRAIN_FORWARD_MAKE)
#undef DPTRAIN_FORWARD_MAKE

  Tensor allocate(Shape shape, DType dtype) override { return Tensor::empty(std::move(shape), dtype); }
  Tensor allocate_zeros(Shape shape, DType dtype) override { return Tensor::zeros(std::move(shape), dtype); }
  Tensor allocate_activation(Shape shape) override {
    const Layout layout = activation_layout(shape);
    return Tensor::empty(std::move(shape), DType::f32, layout);
  }
  Layout activation_layout(const Shape& shape) const override { return preferred_layout(*ctx_, shape); }
  Tensor to_host(const Tensor& t) override {
    Tensor copy_of = Tensor::empty(t.shape(), t.dtype());
    copy(t, copy_of);
    return copy_of;
  }
  void copy_from_host(const Tensor& host, Tensor& t) override { copy(host, t); }

  void fill(Tensor& t, float value) override {
    float* p = t.elements<float>();
    for_each_element(t.numel(), [&](std::int64_t i) { p[i] = value; });
  }
  void copy(const Tensor& src, Tensor& dst) override {
    check_same_size(src, dst, "copy");
    DPTRAIN_CHECK(src.dtype() == dst.dtype(), "copy: element types differ");
    if (src.layout() != dst.layout()) {
      reorder_tensor(*ctx_, src, dst);
    } else if (src.raw() != dst.raw() && src.bytes()) {
      const auto* from = static_cast<const std::byte*>(src.raw());
      auto* to = static_cast<std::byte*>(dst.raw());
      const std::size_t bytes = src.bytes();
      constexpr std::size_t kPiece = std::size_t{1} << 16;  // bytes a thread copies at a time
      if (from + bytes <= to || to + bytes <= from) {       // apart: in pieces, in parallel when large
        for_each_element(
            static_cast<std::int64_t>((bytes + kPiece - 1) / kPiece),
            [&](std::int64_t k) {
              const std::size_t at = static_cast<std::size_t>(k) * kPiece;
              std::memcpy(to + at, from + at, std::min(kPiece, bytes - at));
            },
            /*parallel_from=*/2);
      } else {
        std::memmove(to, from, bytes);
      }
    }
  }
  void add(const Tensor& a, const Tensor& b, Tensor& y) override { sum(a, b, y, false, "add"); }
  void add_relu(const Tensor& a, const Tensor& b, Tensor& y) override { sum(a, b, y, true, "add_relu"); }
  void axpby(float alpha, const Tensor& x, float beta, Tensor& y) override {
    check_same_layout(x, y, "axpby");
    const float* px = x.elements<float>();
    float* py = y.elements<float>();
    for_each_element(y.numel(), [&](std::int64_t i) { py[i] = alpha * px[i] + beta * py[i]; });
  }
  void sgd_update_all(std::span<const SgdTensors> parameters, const SgdHyper& h) override {
    const std::vector<SgdPiece> pieces = sgd_pieces(parameters);
    std::int64_t total = 0;
    for (const SgdPiece& piece : pieces) total += piece.count;
    // One parallel region for all parameters (not one per large parameter), when there is enough work.
    const auto count = static_cast<std::int64_t>(pieces.size());
    for_each_element(
        count,
        [&](std::int64_t k) {
          const SgdPiece& p = pieces[static_cast<std::size_t>(k)];
          for (std::int64_t i = 0; i < p.count; ++i) {
            const float decayed = p.g[i] + p.weight_decay * p.w[i];
            p.v[i] = h.momentum * p.v[i] + decayed;
            p.w[i] -= h.learning_rate * (h.nesterov ? decayed + h.momentum * p.v[i] : p.v[i]);
          }
        },
        total >= kParallelElements ? 1 : count + 1);
  }

  bool scale_and_check_finite(std::span<Tensor* const> tensors, float factor) override {
    bool finite = true;
    for (Tensor* t : tensors) {
      float* p = t->elements<float>();
      for_each_element(t->numel(), [&](std::int64_t i) { p[i] *= factor; });
      finite = all_finite(p, t->numel()) && finite;
    }
    return finite;
  }

  std::unique_ptr<InputStager> make_input_stager(const Shape& shape, const InputFormat& format) override {
    return std::make_unique<HostInputStager>(*this, shape, format);
  }

  double measure_peak_gflops() override { return measure_sgemm_gflops(); }

 private:
  // y = a + b, and max(., 0) with `relu` (the residual join with its ReLU fused, one pass).
  static void sum(const Tensor& a, const Tensor& b, Tensor& y, bool relu, const char* op) {
    check_same_layout(a, b, op);
    check_same_layout(a, y, op);
    const float *pa = a.elements<float>(), *pb = b.elements<float>();
    float* py = y.elements<float>();
    if (relu) {
      for_each_element(y.numel(), [&](std::int64_t i) { py[i] = std::max(pa[i] + pb[i], 0.f); });
    } else {
      for_each_element(y.numel(), [&](std::int64_t i) { py[i] = pa[i] + pb[i]; });
    }
  }

  DnnlContextPtr ctx_ = std::make_shared<DnnlContext>();
};
}  // namespace
}  // namespace dptrain::cpu

namespace dptrain {
std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<cpu::OneDnnBackend>(); }
}  // namespace dptrain
