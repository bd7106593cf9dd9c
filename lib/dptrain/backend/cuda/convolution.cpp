// Convolution on cuDNN. Each of the three passes picks its algorithm once, by timing the candidates
// on the real buffers (cudnnFind*Ex) the first time it runs, within a workspace cap; the choice is
// kept in the context's cache by shape, so another layer of the same shape reuses it without a
// search. The chosen algorithm's workspace comes from the context's shared one. fp32 runs with FMA
// math only (no TF32), so results agree with the CPU backend's to fp32 rounding.
//
// bf16/fp16: x, y, dx, dy and the filter are of the low type, the convolution computes in fp32
// (cuDNN's PSEUDO_BFLOAT16_CONFIG / PSEUDO_HALF_CONFIG) with tensor-op math. The f32 master weight is
// converted into the plan's low-precision copy at each forward, which the backward-data pass of the
// same step reuses. cuDNN's legacy backward-filter writes dw in the type of x and dy, so it goes to a
// low-precision scratch and is widened into the f32 weight gradient. Bias add and bias gradient are
// our kernels (fp32 arithmetic, the bias gradient accumulated in fp32) instead of cudnnAddTensor and
// cudnnConvolutionBackwardBias, whose bias tensor would have to share the low type.
//
// NHWC activations (backend/gpu_layout.hpp: the default for 16-bit): x, y, dx and dy are described as
// NHWC and the filter as KRSC, what the tensor-core kernels read without a transpose. The f32 master
// weight stays KCRS (checkpoints and the optimizer never see another layout): the compute copy is
// made KRSC by the same pass that converts it, and the KRSC filter gradient goes back to KCRS by the
// pass that widens it.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <utility>

#include "dptrain/backend/cuda/descriptors.hpp"
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/layout_kernels.hpp"
#include "dptrain/backend/cuda/plans.hpp"
#include "dptrain/backend/cuda/precision_kernels.hpp"

namespace dptrain::cuda {
namespace {
// One pass's algorithm, chosen on its first run and kept until the cache adopts other choices.
template <typename Algo>
struct Chosen {
  bool done = false;
  int generation = -1;  // the cache's generation the choice was read in
  Algo algo{};
  std::size_t workspace = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // the math type cuDNN timed the algorithm with
};

// Picks the pass's algorithm on its first run, and again after the cache adopted choices made
// elsewhere (rank 0's, a checkpoint's): the one the context's cache holds for `key`, else the fastest
// that ran when `find(requested, &returned, results, workspace, bytes)` (a cudnnFind*Ex call on the
// real buffers; cuDNN sorts them by time) timed the candidates, and deterministic unless the cache's
// policy allows any (pick_algorithm); the cache then keeps it. An adopted choice is checked first:
// `workspace_of(algo, math, &bytes)` (cudnnGet*WorkspaceSize with that math type) must accept it for
// these descriptors, and its workspace is what cuDNN says, never the number it came with, within
// this run's cap (which follows this device's free memory, or DPTRAIN_CUDNN_WORKSPACE_MB, and may
// differ from the run that chose); one that fails
// either is searched again.
template <typename Perf, int Count, typename Algo, typename Find, typename WorkspaceOf>
void choose(Chosen<Algo>& chosen, CudaContext& ctx, const std::string& key, const std::string& who, const char* pass,
            Find&& find, WorkspaceOf&& workspace_of) {
  AlgorithmCache& cache = ctx.algorithm_cache();
  if (chosen.done && chosen.generation == cache.generation()) return;
  if (const FoundAlgorithm* found = cache.find(key, !chosen.done)) {
    std::size_t bytes = found->workspace;
    if (!found->adopted || (workspace_of(static_cast<Algo>(found->algo), found->math, &bytes) == CUDNN_STATUS_SUCCESS &&
                            bytes <= ctx.workspace_cap())) {
      chosen = {true, cache.generation(), static_cast<Algo>(found->algo), bytes, found->math};
      cache.note_workspace_in_use(bytes);
      return;
    }
  }
  // The search time is the search's own, not that of the work queued before it.
  DPTRAIN_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
  const auto start = std::chrono::steady_clock::now();
  std::array<Perf, Count> results{};
  int returned = 0;
  const std::size_t cap = ctx.search_workspace();  // the cap (DPTRAIN_CUDNN_WORKSPACE_MB overrides)
  DPTRAIN_CUDNN_CHECK(find(Count, &returned, results.data(), ctx.workspace(cap), cap));
  bool fell_back = false;
  const int pick = pick_algorithm(results.data(), returned, cache.deterministic(), fell_back);
  if (pick < 0) throw Error(who + ": cuDNN found no working algorithm for the " + pass + " pass");
  const auto& best = results[static_cast<std::size_t>(pick)];
  DPTRAIN_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
  ConvolutionSearch search = describe_search(pass, results.data(), returned, pick, cap);
  search.layer = who;
  cache.add(key, {static_cast<int>(best.algo), best.memory, best.mathType},
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), fell_back,
            std::move(search));
  chosen = {true, cache.generation(), best.algo, best.memory, best.mathType};
  cache.note_workspace_in_use(best.memory);
}

class CudnnConvolution final : public ConvolutionPlan {
 public:
  CudnnConvolution(CudaContextPtr ctx, const ConvolutionSpec& spec)
      : ctx_(std::move(ctx)),
        spec_(spec),
        output_(convolution_output_shape(spec, spec.who)),
        weight_(convolution_weight_shape(spec)),
        type_(ctx_->activation_dtype()),
        layout_(ctx_->activation_layout(spec.input)),
        x_desc_(activation_descriptor(spec.input, type_, layout_, spec.who)),
        y_desc_(activation_descriptor(output_, type_, layout_, spec.who)),
        w_desc_(filter_descriptor(weight_, type_, layout_, spec.who)),
        bias_desc_(channel_descriptor(spec.out_channels)),
        forward_key_(AlgorithmCache::key("forward", type_, spec)),
        data_key_(AlgorithmCache::key("backward-data", type_, spec)),
        filter_key_(AlgorithmCache::key("backward-weights", type_, spec)) {
    const auto& w = spec.window;
    // Cross-correlation is what every framework (and oneDNN) calls convolution. The compute type is
    // fp32 in every precision.
    DPTRAIN_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_desc_, w.pad_h, w.pad_w, w.stride_h, w.stride_w, 1, 1,
                                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    DPTRAIN_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_, low() ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
    if (copies_weight()) {
      weight_low_ = ctx_->allocate(weight_, type_);
      dweight_low_ = ctx_->allocate(weight_, type_);
    }
    if (low()) {
      const auto [samples, plane] = bias_rows();
      const std::int64_t groups = kernels::channel_sum_splits(samples, output_[1], plane);
      if (spec.bias && groups > 1) bias_partials_ = ctx_->allocate(Shape{output_[1] * groups}, DType::f32);
    }
  }

  void forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y) override {
    check_data(x, spec_.input, "input");
    check(weight, weight_, "weight");
    check_data(y, output_, "output");
    const void* w = compute_weight(weight, true);
    choose<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
        forward_, *ctx_, forward_key_, spec_.who, "forward",
        [&](int n, int* count, auto* results, void* ws, std::size_t bytes) {
          use_search_math();
          return cudnnFindConvolutionForwardAlgorithmEx(ctx_->cudnn(), x_desc_, x.raw(), w_desc_, w, conv_desc_,
                                                        y_desc_, y.raw(), n, count, results, ws, bytes);
        },
        [&](cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t math, std::size_t* bytes) {
          return workspace_with(math, [&] {
            return cudnnGetConvolutionForwardWorkspaceSize(ctx_->cudnn(), x_desc_, w_desc_, conv_desc_, y_desc_, algo,
                                                           bytes);
          });
        });
    use_math_of(forward_);
    const float one = 1.f, zero = 0.f;
    DPTRAIN_CUDNN_CHECK(cudnnConvolutionForward(ctx_->cudnn(), &one, x_desc_, x.raw(), w_desc_, w, conv_desc_,
                                                forward_.algo, ctx_->workspace(forward_.workspace), forward_.workspace,
                                                &zero, y_desc_, y.raw()));
    if (spec_.bias) {
      check(bias, Shape{spec_.out_channels}, "bias");
      if (low()) {
        const auto [samples, plane] = bias_rows();
        kernels::add_channel_bias(device_floats(bias), y.raw(), type_, samples, output_[1], plane, ctx_->stream());
      } else {
        DPTRAIN_CUDNN_CHECK(cudnnAddTensor(ctx_->cudnn(), &one, bias_desc_, bias.raw(), &one, y_desc_, y.raw()));
      }
    }
    if (spec_.fuse_relu) kernels::relu_forward(y.raw(), y.raw(), type_, y.numel(), ctx_->stream());
  }

  void backward_data(const Tensor& dy, const Tensor& weight, Tensor& dx) override {
    check_data(dy, output_, "output gradient");
    check(weight, weight_, "weight");
    check_data(dx, spec_.input, "input gradient");
    const void* w = compute_weight(weight, false);
    choose<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
        data_, *ctx_, data_key_, spec_.who, "backward-data",
        [&](int n, int* count, auto* results, void* ws, std::size_t bytes) {
          use_search_math();
          // The search writes dx: where dx holds another consumer's gradient, it searches on a copy.
          Tensor probe = spec_.accumulate_input_gradient ? ctx_->allocate_activation(spec_.input) : Tensor();
          void* out = spec_.accumulate_input_gradient ? probe.raw() : dx.raw();
          return cudnnFindConvolutionBackwardDataAlgorithmEx(ctx_->cudnn(), w_desc_, w, y_desc_, dy.raw(), conv_desc_,
                                                             x_desc_, out, n, count, results, ws, bytes);
        },
        [&](cudnnConvolutionBwdDataAlgo_t algo, cudnnMathType_t math, std::size_t* bytes) {
          return workspace_with(math, [&] {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(ctx_->cudnn(), w_desc_, y_desc_, conv_desc_, x_desc_,
                                                                algo, bytes);
          });
        });
    use_math_of(data_);
    // beta = 1 adds to the gradient another consumer wrote (ConvolutionSpec::accumulate_input_gradient):
    // cuDNN blends in f32 and rounds once, where a scratch and a sum would round twice in 16 bits.
    const float one = 1.f, beta = spec_.accumulate_input_gradient ? 1.f : 0.f;
    DPTRAIN_CUDNN_CHECK(cudnnConvolutionBackwardData(ctx_->cudnn(), &one, w_desc_, w, y_desc_, dy.raw(), conv_desc_,
                                                     data_.algo, ctx_->workspace(data_.workspace), data_.workspace,
                                                     &beta, x_desc_, dx.raw()));
  }

  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dweight, Tensor& dbias) override {
    check_data(x, spec_.input, "input");
    check_data(dy, output_, "output gradient");
    check(dweight, weight_, "weight gradient");
    void* dw = copies_weight() ? dweight_low_.raw() : dweight.raw();
    choose<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
        filter_, *ctx_, filter_key_, spec_.who, "backward-weights",
        [&](int n, int* count, auto* results, void* ws, std::size_t bytes) {
          use_search_math();
          return cudnnFindConvolutionBackwardFilterAlgorithmEx(ctx_->cudnn(), x_desc_, x.raw(), y_desc_, dy.raw(),
                                                               conv_desc_, w_desc_, dw, n, count, results, ws, bytes);
        },
        [&](cudnnConvolutionBwdFilterAlgo_t algo, cudnnMathType_t math, std::size_t* bytes) {
          return workspace_with(math, [&] {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(ctx_->cudnn(), x_desc_, y_desc_, conv_desc_, w_desc_,
                                                                  algo, bytes);
          });
        });
    use_math_of(filter_);
    const float one = 1.f, zero = 0.f;
    DPTRAIN_CUDNN_CHECK(cudnnConvolutionBackwardFilter(ctx_->cudnn(), &one, x_desc_, x.raw(), y_desc_, dy.raw(),
                                                       conv_desc_, filter_.algo, ctx_->workspace(filter_.workspace),
                                                       filter_.workspace, &zero, w_desc_, dw));
    if (nhwc()) {
      // KRSC [K][R*S][C] back to the master's KCRS [K][C][R*S], widened on the way.
      kernels::transpose_samples(dw, type_, dweight.raw(), DType::f32, weight_[0], weight_[2] * weight_[3], weight_[1],
                                 ctx_->stream());
    } else if (low()) {
      kernels::convert(dw, type_, dweight.raw(), DType::f32, dweight.numel(), ctx_->stream());
    }
    if (spec_.bias) {
      check(dbias, Shape{spec_.out_channels}, "bias gradient");
      if (low()) {
        const auto [samples, plane] = bias_rows();
        kernels::channel_sums(dy.raw(), type_, device_floats(dbias), device_floats(bias_partials_), samples, output_[1],
                              plane, ctx_->stream());
      } else {
        DPTRAIN_CUDNN_CHECK(
            cudnnConvolutionBackwardBias(ctx_->cudnn(), &one, y_desc_, dy.raw(), &zero, bias_desc_, dbias.raw()));
      }
    }
  }

 private:
  bool low() const { return type_ != DType::f32; }
  bool nhwc() const { return layout_ == Layout::nhwc; }
  // Whether cuDNN reads a copy of the f32 KCRS master weight (in the low type, or KRSC, or both) and
  // writes the filter gradient to a scratch of that form.
  bool copies_weight() const { return low() || nhwc(); }
  // The output as the bias kernels see it: [samples, channels, plane] = [N, C, H*W] in NCHW, and
  // [N*H*W, C, 1] in NHWC.
  std::pair<std::int64_t, std::int64_t> bias_rows() const {
    const std::int64_t pixels = output_[2] * output_[3];
    return nhwc() ? std::pair{output_[0] * pixels, std::int64_t{1}} : std::pair{output_[0], pixels};
  }
  // Parameters (weight, bias and their gradients) are f32 in every precision.
  void check(const Tensor& t, const Shape& shape, const char* what) const {
    check_device_tensor(*ctx_, t, shape, spec_.who, what);
  }
  void check_data(const Tensor& t, const Shape& shape, const char* what) const {
    check_activation(*ctx_, t, shape, spec_.who, what);
  }
  // Low precision: the three passes share one convolution descriptor but may each pick an algorithm
  // that cuDNN timed with another math type (tensor-op, or its fallback), and an algorithm must run
  // with the math type it was found with. So the descriptor asks for tensor-op math while a pass is
  // being timed (use_search_math) and for the chosen algorithm's math type when it runs (use_math_of).
  // fp32 keeps FMA math throughout.
  void use_search_math() {
    if (low()) DPTRAIN_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_, CUDNN_TENSOR_OP_MATH));
  }
  template <typename Algo>
  void use_math_of(const Chosen<Algo>& chosen) {
    if (low()) DPTRAIN_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_, chosen.math));
  }
  // cuDNN's workspace size for an algorithm under `math` (the descriptor's math type set for the
  // query, as the run will set it; fp32 runs FMA math only, so an adopted choice of another math type
  // is rejected there). Returns the query's status: not supported means the choice does not fit.
  template <typename Query>
  cudnnStatus_t workspace_with(cudnnMathType_t math, Query&& query) {
    if (!low() && math != CUDNN_FMA_MATH && math != CUDNN_DEFAULT_MATH) return CUDNN_STATUS_NOT_SUPPORTED;
    if (low()) DPTRAIN_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_, math));
    return query();
  }
  // The filter cuDNN reads: the f32 master itself, or its low-precision copy. A forward refreshes the
  // copy; the backward-data pass that follows in the same step reuses it unless it is handed another
  // weight tensor than the forward converted (or runs first).
  const void* compute_weight(const Tensor& weight, bool refresh) {
    if (!copies_weight()) return weight.raw();
    if (refresh || converted_from_ != weight.raw()) {
      if (nhwc()) {
        // KCRS [K][C][R*S] to KRSC [K][R*S][C], narrowed on the way.
        kernels::transpose_samples(weight.raw(), DType::f32, weight_low_.raw(), type_, weight_[0], weight_[1],
                                   weight_[2] * weight_[3], ctx_->stream());
      } else {
        kernels::convert(weight.raw(), DType::f32, weight_low_.raw(), type_, weight.numel(), ctx_->stream());
      }
      converted_from_ = weight.raw();
    }
    return weight_low_.raw();
  }

  CudaContextPtr ctx_;
  ConvolutionSpec spec_;
  Shape output_, weight_;
  DType type_;
  Layout layout_;                         // of x, y, dx and dy: plain (NCHW) or NHWC
  Tensor weight_low_, dweight_low_;       // copies_weight(): the compute copy of the weight, the filter gradient
  Tensor bias_partials_;                  // bf16/f16 with a bias: the bias gradient's partial sums
  const void* converted_from_ = nullptr;  // the master weight weight_low_ was last converted from
  TensorDescriptor x_desc_, y_desc_;
  FilterDescriptor w_desc_;
  TensorDescriptor bias_desc_;
  ConvolutionDescriptor conv_desc_;
  std::string forward_key_, data_key_, filter_key_;  // the passes' keys in the context's algorithm cache
  Chosen<cudnnConvolutionFwdAlgo_t> forward_;
  Chosen<cudnnConvolutionBwdDataAlgo_t> data_;
  Chosen<cudnnConvolutionBwdFilterAlgo_t> filter_;
};
}  // namespace

std::unique_ptr<ConvolutionPlan> make_convolution(CudaContextPtr ctx, const ConvolutionSpec& spec) {
  return std::make_unique<CudnnConvolution>(std::move(ctx), spec);
}

}  // namespace dptrain::cuda
