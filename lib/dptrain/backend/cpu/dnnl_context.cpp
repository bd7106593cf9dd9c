#include "dptrain/backend/cpu/dnnl_context.hpp"

namespace dptrain::cpu {

namespace {
// The source layout oneDNN's convolution picks for a 64-channel input when left to choose.
Layout convolution_block(const dnnl::engine& engine) {
  const dnnl::memory::dims src{2, 64, 14, 14}, wei{64, 64, 3, 3}, dst{2, 64, 14, 14}, one{1, 1};
  const auto any = [](const dnnl::memory::dims& d) {
    return DPTRAIN_DNNL_CHECK(dnnl::memory::desc(d, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any));
  };
  const auto desc = DPTRAIN_DNNL_CHECK(dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                                       dnnl::algorithm::convolution_direct, any(src),
                                                                       any(wei), any(dst), one, one, one));
  const auto pd = DPTRAIN_DNNL_CHECK(dnnl::convolution_forward::primitive_desc(desc, engine));
  const auto blocked16 = DPTRAIN_DNNL_CHECK(dnnl::memory::desc(src, dnnl::memory::data_type::f32, dnnl_tag::aBcd16b));
  return pd.src_desc() == blocked16 ? Layout::blocked16 : Layout::blocked8;
}
}  // namespace

DnnlContext::DnnlContext() : block(convolution_block(engine)) {}

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
  return DPTRAIN_DNNL_CHECK(dnnl::memory::desc(dims_of(shape), dnnl::memory::data_type::f32, tag));
}

dnnl::memory wrap(const DnnlContext& ctx, const dnnl::memory::desc& desc, const Tensor& t) {
  return DPTRAIN_DNNL_CHECK(dnnl::memory(desc, ctx.engine, const_cast<void*>(t.raw())));
}

void check_cpu_tensor(const Tensor& t, const Shape& expected, const std::string& op, const char* what) {
  DPTRAIN_CHECK(t.device().is_cpu(), op, ": ", what, " is on ", t.device().to_string(),
                " but the CPU backend needs host memory");
  DPTRAIN_CHECK(t.dtype() == DType::f32, op, ": ", what, " holds ", name_of(t.dtype()), " but f32 is needed");
  check_shape(t, expected, op, what);
}

dnnl::memory::desc layout_desc(const Shape& shape, Layout layout) {
  switch (layout) {
    case Layout::blocked8: return plain_desc(shape, dnnl_tag::aBcd8b);
    case Layout::blocked16: return plain_desc(shape, dnnl_tag::aBcd16b);
    case Layout::nhwc: return plain_desc(shape, dnnl_tag::acdb);
    case Layout::plain: break;
  }
  return plain_desc(shape);
}

Layout preferred_layout(const DnnlContext& ctx, const Shape& shape) {
  if (blockable(shape, ctx.block)) return ctx.block;
  return blockable(shape, Layout::blocked8) ? Layout::blocked8 : Layout::plain;
}

Slot::Bridge& Slot::bridge(DnnlContext& ctx, Layout layout) {
  auto& b = bridges_[static_cast<int>(layout)];
  if (!b) {
    b = std::make_unique<Bridge>();
    b->user = layout_desc(shape_, layout);
    b->same = b->user == wanted_;
    if (!b->same) {
      b->staging = DPTRAIN_DNNL_CHECK(dnnl::memory(wanted_, ctx.engine));
      b->to_wanted =
          DPTRAIN_DNNL_CHECK(dnnl::reorder(dnnl::reorder::primitive_desc(ctx.engine, b->user, ctx.engine, wanted_)));
      b->to_user =
          DPTRAIN_DNNL_CHECK(dnnl::reorder(dnnl::reorder::primitive_desc(ctx.engine, wanted_, ctx.engine, b->user)));
    }
  }
  return *b;
}

dnnl::memory Slot::input(DnnlContext& ctx, const Tensor& t) {
  Bridge& b = bridge(ctx, t.layout());
  dnnl::memory user = wrap(ctx, b.user, t);
  if (b.same) return user;
  run(ctx, b.to_wanted, {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, b.staging}});
  return b.staging;
}

dnnl::memory Slot::output(DnnlContext& ctx, Tensor& t) {
  Bridge& b = bridge(ctx, t.layout());
  return b.same ? wrap(ctx, b.user, t) : b.staging;
}

void Slot::finish_output(DnnlContext& ctx, Tensor& t) {
  Bridge& b = bridge(ctx, t.layout());
  if (b.same) return;
  run(ctx, b.to_user, {{DNNL_ARG_FROM, b.staging}, {DNNL_ARG_TO, wrap(ctx, b.user, t)}});
}

void Workspace::add_to(DnnlContext& ctx, std::unordered_map<int, dnnl::memory>& args) {
  if (desc_.get_size() == 0) return;
  if (!memory_) memory_ = DPTRAIN_DNNL_CHECK(dnnl::memory(desc_, ctx.engine));
  args.emplace(DNNL_ARG_WORKSPACE, memory_);
}

void reorder_tensor(DnnlContext& ctx, const Tensor& src, Tensor& dst) {
  DPTRAIN_CHECK(src.shape() == dst.shape() && src.dtype() == DType::f32 && dst.dtype() == DType::f32,
                "reorder: tensors of shapes ", src.shape().to_string(), " and ", dst.shape().to_string(),
                " (or element types) differ");
  dnnl::memory from = wrap(ctx, layout_desc(src.shape(), src.layout()), src);
  dnnl::memory to = wrap(ctx, layout_desc(dst.shape(), dst.layout()), dst);
  run(ctx, DPTRAIN_DNNL_CHECK(dnnl::reorder(from, to)), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

void run(DnnlContext& ctx, const dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args) {
  DPTRAIN_DNNL_CHECK(p.execute(ctx.stream, args));
  DPTRAIN_DNNL_CHECK(ctx.stream.wait());
}

}  // namespace dptrain::cpu
