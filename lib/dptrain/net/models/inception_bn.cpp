// BN-Inception (Ioffe & Szegedy 2015) following MXNet's example/image-classification
// symbol_inception-bn.py, the "Inception-BN" of the whitepaper's MXNet runs: every convolution keeps
// its bias and is followed by batch norm (eps 1e-5) and ReLU; pooling rounds down ("valid").
#include "dptrain/net/blocks.hpp"
#include "dptrain/net/models/registry.hpp"

namespace dptrain {
namespace {
constexpr float kEps = 1e-5f;

int conv(NetBuilder& b, const std::string& name, int x, int out, Window2d w) {
  return blocks::conv_bn_relu(b, name, x, out, w, /*conv_bias=*/true, kEps);
}

enum class Pool { avg, max };

// Factory A: 1x1 | 1x1 -> 3x3 | 1x1 -> 3x3 -> 3x3 | pool -> 1x1 projection.
int factory_a(NetBuilder& b, const std::string& name, int x, int c1, int c3r, int c3, int d3r, int d3, Pool pool,
              int proj) {
  const int a = conv(b, name + "/1x1", x, c1, Window2d::square(1));
  const int r = conv(b, name + "/3x3_reduce", x, c3r, Window2d::square(1));
  const int t = conv(b, name + "/3x3", r, c3, Window2d::square(3, 1, 1));
  const int dr = conv(b, name + "/double_3x3_reduce", x, d3r, Window2d::square(1));
  const int d0 = conv(b, name + "/double_3x3_0", dr, d3, Window2d::square(3, 1, 1));
  const int d1 = conv(b, name + "/double_3x3_1", d0, d3, Window2d::square(3, 1, 1));
  const int p = pool == Pool::avg ? blocks::avg_pool(b, name + "/pool", x, Window2d::square(3, 1, 1))
                                  : blocks::max_pool(b, name + "/pool", x, Window2d::square(3, 1, 1));
  const int q = conv(b, name + "/proj", p, proj, Window2d::square(1));
  return blocks::concat(b, name + "/output", {a, t, d1, q});
}

// Factory B (grid reduction): 1x1 -> 3x3/2 | 1x1 -> 3x3 -> 3x3/2 | max pool 3x3/2.
int factory_b(NetBuilder& b, const std::string& name, int x, int c3r, int c3, int d3r, int d3) {
  const int r = conv(b, name + "/3x3_reduce", x, c3r, Window2d::square(1));
  const int t = conv(b, name + "/3x3", r, c3, Window2d::square(3, 2, 1));
  const int dr = conv(b, name + "/double_3x3_reduce", x, d3r, Window2d::square(1));
  const int d0 = conv(b, name + "/double_3x3_0", dr, d3, Window2d::square(3, 1, 1));
  const int d1 = conv(b, name + "/double_3x3_1", d0, d3, Window2d::square(3, 2, 1));
  const int p = blocks::max_pool(b, name + "/pool", x, Window2d::square(3, 2, 1));
  return blocks::concat(b, name + "/output", {t, d1, p});
}
}  // namespace

std::unique_ptr<Net> build_inception_bn(Backend& backend, const ModelConfig& c) {
  NetBuilder b(backend, Shape{c.batch, c.channels, c.image_size, c.image_size});
  int x = conv(b, "conv1", NetBuilder::kImages, 64, Window2d::square(7, 2, 3));
  x = blocks::max_pool(b, "pool1", x, Window2d::square(3, 2));
  x = conv(b, "conv2_reduce", x, 64, Window2d::square(1));
  x = conv(b, "conv2", x, 192, Window2d::square(3, 1, 1));
  x = blocks::max_pool(b, "pool2", x, Window2d::square(3, 2));
  x = factory_a(b, "in3a", x, 64, 64, 64, 64, 96, Pool::avg, 32);
  x = factory_a(b, "in3b", x, 64, 64, 96, 64, 96, Pool::avg, 64);
  x = factory_b(b, "in3c", x, 128, 160, 64, 96);
  x = factory_a(b, "in4a", x, 224, 64, 96, 96, 128, Pool::avg, 128);
  x = factory_a(b, "in4b", x, 192, 96, 128, 96, 128, Pool::avg, 128);
  x = factory_a(b, "in4c", x, 160, 128, 160, 128, 160, Pool::avg, 128);
  x = factory_a(b, "in4d", x, 96, 128, 192, 160, 192, Pool::avg, 128);
  x = factory_b(b, "in4e", x, 128, 192, 192, 256);
  x = factory_a(b, "in5a", x, 352, 192, 320, 160, 224, Pool::avg, 128);
  x = factory_a(b, "in5b", x, 352, 192, 320, 192, 224, Pool::max, 128);
  x = blocks::global_avg_pool(b, "global_pool", x);
  x = blocks::linear(b, "fc1", x, c.classes);
  blocks::loss(b, "softmax", x, 1.f, c.label_smoothing);
  return b.build(c.memory);
}

}  // namespace dptrain
