#pragma once
// The oneDNN engine and stream every CPU plan shares, and helpers that wrap our plain-layout host
// tensors as oneDNN memory.
#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <string>
#include <unordered_map>

#include "dptrain/core/check_dnnl.hpp"
#include "dptrain/core/tensor.hpp"

namespace dptrain::cpu {

struct DnnlContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
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

// Moves data between a tensor in plain layout and the layout a primitive chose (format_tag::any).
// When the two agree, the tensor's memory is used directly and no copy happens.
class LayoutBridge {
 public:
  LayoutBridge() = default;
  LayoutBridge(const DnnlContext& ctx, const dnnl::memory::desc& user, const dnnl::memory::desc& wanted);
  // The primitive's view of `t` as an input (reordered in when layouts differ).
  dnnl::memory input(DnnlContext& ctx, const Tensor& t);
  // Memory the primitive writes; call finish_output(t) after executing to move it into `t`.
  dnnl::memory output(DnnlContext& ctx, Tensor& t);
  void finish_output(DnnlContext& ctx, Tensor& t);

 private:
  dnnl::memory::desc user_;
  dnnl::memory::desc wanted_;
  dnnl::memory staging_;  // only when layouts differ, with the two reorders made once
  dnnl::reorder to_wanted_;
  dnnl::reorder to_user_;
  bool same_ = true;
};

// Executes a primitive on the context's stream and waits for it (CPU primitives are synchronous anyway).
void run(DnnlContext& ctx, const dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args);

}  // namespace dptrain::cpu
