// The CPU backend keeps activations blocked (nChw16c with AVX-512, nChw8c otherwise). Every plan must
// give the same numbers whether its tensors are plain or blocked in either way, and copies between the
// layouts must be exact.
#include <catch2/catch.hpp>

#include "dptrain/backend/backend.hpp"
#include "support/tensor_testing.hpp"

using namespace dptrain;

namespace {
// The blocked layout a section works in.
Layout blocked_layout = Layout::blocked8;

Tensor blocked_empty(const Shape& s) { return Tensor::zeros(s, DType::f32, blocked_layout); }
// A blocked copy of a plain host tensor.
Tensor blocked(Backend& backend, const Tensor& plain) {
  Tensor t = blocked_empty(plain.shape());
  backend.copy(plain, t);
  return t;
}

void check_same(Backend& backend, const Tensor& from_blocked, const Tensor& from_plain) {
  CHECK(testing::relative_error(backend.to_host(from_blocked), from_plain) < 1e-6);
}
}  // namespace

TEST_CASE("blocked tensors round-trip exactly and refuse NCHW access", "[backend][layout]") {
  auto backend = make_cpu_backend();
  const Shape s{2, 16, 3, 5};
  const Tensor x = testing::random_tensor(s, 1);
  blocked_layout = Layout::blocked16;
  const Tensor b16 = blocked(*backend, x);
  // nChw16c: element (n=1, c=9, h=2, w=4) sits in sample 1's only block, at spatial position 14, lane 9.
  CHECK(b16.elements<float>()[240 + 14 * 16 + 9] == x.data<float>()[240 + (9 * 3 + 2) * 5 + 4]);
  CHECK(testing::relative_error(backend->to_host(b16), x) == 0.0);
  CHECK_THROWS_WITH(b16.data<float>(), Catch::Contains("in the nChw16c layout"));
  CHECK_THROWS_WITH(Tensor::empty(Shape{2, 24, 3, 3}, DType::f32, Layout::blocked16),
                    Catch::Contains("cannot be stored in the nChw16c layout"));
  blocked_layout = Layout::blocked8;
  const Tensor b = blocked(*backend, x);
  CHECK(b.bytes() == x.bytes());
  // nChw8c: element (n=0, c=9, h=1, w=2) sits in block 1, at spatial position 1*5+2, lane 1.
  CHECK(b.elements<float>()[(1 * 15 + 7) * 8 + 1] == x.data<float>()[(9 * 3 + 1) * 5 + 2]);
  CHECK_THROWS_WITH(b.data<float>(), Catch::Contains("in the nChw8c layout"));
  CHECK(testing::relative_error(backend->to_host(b), x) == 0.0);
  CHECK_THROWS_WITH(b.reshaped(Shape{2, 240}), Catch::Contains("in the nChw8c layout; make a plain copy first"));
  // With a 1x1 spatial size the blocked layout is the plain one, so a reshape is allowed.
  const Tensor pooled = blocked(*backend, testing::random_tensor(Shape{2, 16, 1, 1}, 2));
  CHECK(pooled.reshaped(Shape{2, 16}).layout() == Layout::plain);
  CHECK_THROWS_WITH(Tensor::empty(Shape{2, 12, 3, 3}, DType::f32, Layout::blocked8),
                    Catch::Contains("cannot be stored in the nChw8c layout"));
  CHECK(backend->allocate_activation(Shape{2, 12, 3, 3}).layout() == Layout::plain);
  CHECK(backend->allocate_activation(Shape{2, 16}).layout() == Layout::plain);
  // 24 channels fit only blocks of 8; 32 fit the machine's own block (16 with AVX-512, else 8).
  CHECK(backend->allocate_activation(Shape{2, 24, 3, 3}).layout() == Layout::blocked8);
  const Layout wide = backend->allocate_activation(Shape{2, 32, 3, 3}).layout();
  CHECK((wide == Layout::blocked8 || wide == Layout::blocked16));
}

TEST_CASE("plans give the same results on blocked and plain tensors", "[backend][layout]") {
  auto backend = make_cpu_backend();
  blocked_layout = GENERATE(Layout::blocked8, Layout::blocked16);
  CAPTURE(block_channels(blocked_layout));
  const Shape in{3, 16, 7, 9};
  const Tensor x = testing::random_tensor(in, 3);
  const Tensor bx = blocked(*backend, x);

  SECTION("convolution, forward and backward") {
    ConvolutionSpec spec{in, 32, Window2d::square(3, 2, 1)};
    auto plan = backend->make_convolution(spec);
    const Shape out = convolution_output_shape(spec, "c");
    const Tensor w = testing::random_tensor(convolution_weight_shape(spec), 4),
                 b = testing::random_tensor(Shape{32}, 5);
    Tensor y = Tensor::zeros(out), by = blocked_empty(out);
    plan->forward(x, w, b, y);
    plan->forward(bx, w, b, by);
    check_same(*backend, by, y);
    const Tensor dy = testing::random_tensor(out, 6);
    const Tensor bdy = blocked(*backend, dy);
    Tensor dx = Tensor::zeros(in), bdx = blocked_empty(in);
    plan->backward_data(dy, w, dx);
    plan->backward_data(bdy, w, bdx);
    check_same(*backend, bdx, dx);
    Tensor dw = Tensor::zeros(w.shape()), db = Tensor::zeros(Shape{32}), dw2 = Tensor::zeros(w.shape()),
           db2 = Tensor::zeros(Shape{32});
    plan->backward_weights(x, dy, dw, db);
    plan->backward_weights(bx, bdy, dw2, db2);
    CHECK(testing::relative_error(dw2, dw) < 1e-6);
    CHECK(testing::relative_error(db2, db) < 1e-6);
  }
  SECTION("pooling, batch norm, LRN, ReLU") {
    PoolingSpec pool{in, PoolingKind::max, Window2d::square(3, 2), Rounding::ceil};
    auto pooling = backend->make_pooling(pool);
    const Shape out = pooling_output_shape(pool, "p");
    Tensor y = Tensor::zeros(out), by = blocked_empty(out);
    pooling->forward(x, y, true);
    pooling->forward(bx, by, true);
    check_same(*backend, by, y);

    auto bn = backend->make_batch_norm(BatchNormSpec{in});
    const Tensor scale = testing::random_tensor(Shape{16}, 7), shift = testing::random_tensor(Shape{16}, 8);
    Tensor m = Tensor::zeros(Shape{16}), v = Tensor::zeros(Shape{16}), m2 = Tensor::zeros(Shape{16}),
           v2 = Tensor::zeros(Shape{16});
    Tensor ny = Tensor::zeros(in), bny = blocked_empty(in);
    bn->forward_training(x, scale, shift, ny, m, v);
    bn->forward_training(bx, scale, shift, bny, m2, v2);
    check_same(*backend, bny, ny);
    CHECK(testing::relative_error(v2, v) < 1e-6);

    auto lrn = backend->make_lrn(LrnSpec{in, 5, 0.5f, 0.75f, 1.f});
    Tensor ly = Tensor::zeros(in), bly = blocked_empty(in);
    lrn->forward(x, ly, true);
    lrn->forward(bx, bly, true);
    check_same(*backend, bly, ly);

    auto relu = backend->make_relu(in);
    Tensor ry = Tensor::zeros(in), bry = blocked_empty(in);
    relu->forward(x, ry);
    relu->forward(bx, bry);
    check_same(*backend, bry, ry);
    CHECK_THROWS_WITH(relu->forward(bx, ry), Catch::Contains("different layouts"));
  }
  SECTION("concat of blocked, plain and mixed inputs") {
    const Shape other{3, 4, 7, 9};  // 4 channels: cannot be blocked
    const Tensor z = testing::random_tensor(other, 9);
    const std::vector<Shape> shapes{in, other, in};
    auto concat = backend->make_concat(shapes);
    const Shape out = concat_output_shape(shapes, "c");
    Tensor y = Tensor::zeros(out);
    const std::vector<const Tensor*> plain_inputs{&x, &z, &x};
    concat->forward(plain_inputs, y);
    Tensor mixed_y = Tensor::zeros(out);  // 36 channels: plain
    const std::vector<const Tensor*> mixed{&bx, &z, &bx};
    concat->forward(mixed, mixed_y);
    CHECK(testing::relative_error(mixed_y, y) == 0.0);
    // All blocked: the fast path.
    const std::vector<Shape> same{in, in};
    auto concat2 = backend->make_concat(same);
    const Shape out2 = concat_output_shape(same, "c");
    Tensor y2 = Tensor::zeros(out2), by2 = blocked_empty(out2);
    const std::vector<const Tensor*> p2{&x, &x}, b2{&bx, &bx};
    concat2->forward(p2, y2);
    concat2->forward(b2, by2);
    check_same(*backend, by2, y2);
    Tensor dx0 = blocked_empty(in), dx1 = blocked_empty(in);
    const std::vector<Tensor*> grads{&dx0, &dx1};
    concat2->backward(by2, grads);
    check_same(*backend, dx1, x);
  }
  SECTION("dropout draws the same mask in either layout") {
    auto dropout = backend->make_dropout(DropoutSpec{in, 0.5f});
    const RandomPosition at{7, 11, 40};
    Tensor y = Tensor::zeros(in), by = blocked_empty(in);
    dropout->forward(x, y, at);
    dropout->forward(bx, by, at);
    check_same(*backend, by, y);
  }
  SECTION("linear reads a blocked input") {
    auto linear = backend->make_linear(LinearSpec{in, 5});
    const Tensor w = testing::random_tensor(Shape{5, in.per_sample()}, 12), b = testing::random_tensor(Shape{5}, 13);
    Tensor y = Tensor::zeros(Shape{3, 5}), y2 = Tensor::zeros(Shape{3, 5});
    linear->forward(x, w, b, y);
    linear->forward(bx, w, b, y2);
    CHECK(testing::relative_error(y2, y) < 1e-6);
    const Tensor dy = testing::random_tensor(Shape{3, 5}, 14);
    Tensor dx = Tensor::zeros(in), bdx = blocked_empty(in);
    linear->backward_data(dy, w, dx);
    linear->backward_data(dy, w, bdx);
    check_same(*backend, bdx, dx);
  }
}
