#include "dptrain/backend/cpu/dnnl_context.hpp"

namespace dptrain::cpu {

dnnl::memory::dims dims_of(const Shape& shape) { return dnnl::memory::dims(shape.dims().begin(), shape.dims().end()); }

dnnl::memory::desc plain_desc(const Shape& shape, dnnl_tag tag) {
  if (tag == dnnl_tag::undef) {
    switch (shape.rank()) {
      case 1: tag = dnnl_tag::a; break;
      case 2: tag = dnnl_tag::ab; break;
      case 3: tag = dnnl_tag::abc; break;
      case 4: tag = dnnl_tag::abcd; break;
      default: throw Error(detail::concat("no plain oneDNN layout for shape ", shape.to_string()));
    }
  }
  return DNNL_CHECK(dnnl::memory::desc(dims_of(shape), dnnl::memory::data_type::f32, tag));
}

dnnl::memory wrap(const DnnlContext& ctx, const dnnl::memory::desc& desc, const Tensor& t) {
  return DNNL_CHECK(dnnl::memory(desc, ctx.engine, const_cast<void*>(t.raw())));
}

void check_cpu_tensor(const Tensor& t, const Shape& expected, const std::string& op, const char* what) {
  DPTRAIN_CHECK(t.device().is_cpu(), op, ": ", what, " is on ", t.device().to_string(),
                " but the CPU backend needs host memory");
  DPTRAIN_CHECK(t.dtype() == DType::f32, op, ": ", what, " holds ", name_of(t.dtype()), " but f32 is needed");
  check_shape(t, expected, op, what);
}

LayoutBridge::LayoutBridge(const DnnlContext& ctx, const dnnl::memory::desc& user, const dnnl::memory::desc& wanted)
    : user_(user), wanted_(wanted), same_(user == wanted) {
  if (same_) return;
  staging_ = DNNL_CHECK(dnnl::memory(wanted_, ctx.engine));
  to_wanted_ = DNNL_CHECK(dnnl::reorder(dnnl::reorder::primitive_desc(ctx.engine, user_, ctx.engine, wanted_)));
  to_user_ = DNNL_CHECK(dnnl::reorder(dnnl::reorder::primitive_desc(ctx.engine, wanted_, ctx.engine, user_)));
}

dnnl::memory LayoutBridge::input(DnnlContext& ctx, const Tensor& t) {
  dnnl::memory user = wrap(ctx, user_, t);
  if (same_) return user;
  run(ctx, to_wanted_, {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, staging_}});
  return staging_;
}

dnnl::memory LayoutBridge::output(DnnlContext& ctx, Tensor& t) { return same_ ? wrap(ctx, user_, t) : staging_; }

void LayoutBridge::finish_output(DnnlContext& ctx, Tensor& t) {
  if (same_) return;
  dnnl::memory user = wrap(ctx, user_, t);
  run(ctx, to_user_, {{DNNL_ARG_FROM, staging_}, {DNNL_ARG_TO, user}});
}

void run(DnnlContext& ctx, const dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args) {
  DNNL_CHECK(p.execute(ctx.stream, args));
  DNNL_CHECK(ctx.stream.wait());
}

}  // namespace dptrain::cpu
