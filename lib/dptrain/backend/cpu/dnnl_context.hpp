#pragma once
// The oneDNN engine and stream every CPU plan shares, and helpers that wrap our plain-layout host
// tensors as oneDNN memory.
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "dptrain/core/check_dnnl.hpp"
#include "dptrain/core/tensor.hpp"

namespace dptrain::cpu {

struct DnnlContext {
  DnnlContext();
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  // The channel blocking this machine's convolution kernels work in (blocked16 with AVX-512, blocked8
  // with AVX2), found by asking oneDNN once. Keeping activations in it means no reorder, and no
  // per-plan staging copy of every activation, between convolutions and the ops around them.
  Layout block = Layout::blocked8;
};
using DnnlContextPtr = std::shared_ptr<DnnlContext>;

using dnnl_tag = dnnl::memory::format_tag;

// A plain (row-major) f32 descriptor for a shape: nchw for 4-D, nc for 2-D, a for 1-D.
dnnl::memory::desc plain_desc(const Shape& shape, dnnl_tag tag = dnnl_tag::undef);
dnnl::memory::dims dims_of(const Shape& shape);

// Wraps a host tensor's memory without copying. The tensor must outlive the returned memory's use.
dnnl::memory wrap(const DnnlContext& ctx, const dnnl::memory::desc& desc, const Tensor& t);

// Tensors passed to a CPU plan must be f32 host tensors with the shape the plan was made for.
void check_cpu_tensor(const Tensor& t, const Shape& expected, const std::string& op, const char* what);

// The oneDNN descriptor of a tensor of this shape stored in this layout.
dnnl::memory::desc layout_desc(const Shape& shape, Layout layout);
// The layout the CPU backend keeps activations in: the context's block where the shape allows it (what
// the convolution, pooling, LRN and batch-norm kernels read natively), blocked8 where only that fits
// (GoogLeNet's 24-channel layers), plain otherwise.
Layout preferred_layout(const DnnlContext& ctx, const Shape& shape);

// One tensor argument of a primitive. The primitive was made for one memory layout (`wanted`); the
// tensor passed at run time may be plain or blocked. When they agree, the tensor's memory is used
// directly; otherwise the data is reordered through a staging buffer (one per layout, made once).
class Slot {
 public:
  Slot() = default;
  Slot(Shape shape, dnnl::memory::desc wanted) : shape_(std::move(shape)), wanted_(std::move(wanted)) {}
  const dnnl::memory::desc& wanted() const { return wanted_; }
  // The primitive's view of `t` as an input.
  dnnl::memory input(DnnlContext& ctx, const Tensor& t);
  // Memory the primitive writes; call finish_output(t) after executing to move it into `t`.
  dnnl::memory output(DnnlContext& ctx, Tensor& t);
  void finish_output(DnnlContext& ctx, Tensor& t);

 private:
  struct Bridge {
    dnnl::memory::desc user;
    bool same = true;
    dnnl::memory staging;
    dnnl::reorder to_wanted, to_user;
  };
  Bridge& bridge(DnnlContext& ctx, Layout layout);

  Shape shape_;
  dnnl::memory::desc wanted_;
  std::unique_ptr<Bridge> bridges_[3];  // indexed by Layout
};

// The workspace a primitive keeps from forward to backward (max-pooling indices, LRN scales). It is
// allocated on the first run, not with the plan, so a net built only for a memory estimate (at any
// batch size) allocates nothing.
class Workspace {
 public:
  Workspace() = default;
  explicit Workspace(dnnl::memory::desc desc) : desc_(std::move(desc)) {}
  // Adds DNNL_ARG_WORKSPACE to `args` when the primitive has one.
  void add_to(DnnlContext& ctx, std::unordered_map<int, dnnl::memory>& args);

 private:
  dnnl::memory::desc desc_;
  dnnl::memory memory_;
};

// Copies between two host tensors of one shape, reordering when their layouts differ.
void reorder_tensor(DnnlContext& ctx, const Tensor& src, Tensor& dst);

// Executes a primitive on the context's stream and waits for it (CPU primitives are synchronous anyway).
void run(DnnlContext& ctx, const dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args);

}  // namespace dptrain::cpu
