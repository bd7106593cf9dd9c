// inception-mini: a small network of the same kind as the big ones (inception modules with batch
// norm), sized for 28-32 px images so the Fashion-MNIST demo trains in minutes on two cores.
#include "dptrain/net/blocks.hpp"
#include "dptrain/net/models/registry.hpp"

namespace dptrain {
namespace {
// 1x1, 3x3 (after a 1x1 reduction) and a pooled projection, concatenated.
int mini_inception(NetBuilder& b, const std::string& name, int x, int c1, int c3r, int c3, int cp) {
  const int a = blocks::conv_bn_relu(b, name + "/1x1", x, c1, Window2d::square(1));
  const int r = blocks::conv_bn_relu(b, name + "/3x3_reduce", x, c3r, Window2d::square(1));
  const int t = blocks::conv_bn_relu(b, name + "/3x3", r, c3, Window2d::square(3, 1, 1));
  const int p = blocks::max_pool(b, name + "/pool", x, Window2d::square(3, 1, 1));
  const int q = blocks::conv_bn_relu(b, name + "/pool_proj", p, cp, Window2d::square(1));
  return blocks::concat(b, name + "/output", {a, t, q});
}
}  // namespace

std::unique_ptr<Net> build_inception_mini(Backend& backend, const ModelConfig& c) {
  NetBuilder b(backend, Shape{c.batch, c.channels, c.image_size, c.image_size});
  int x = blocks::conv_bn_relu(b, "conv1", NetBuilder::kImages, 32, Window2d::square(3, 1, 1));
  x = mini_inception(b, "inception_a", x, 16, 16, 24, 8);  // 48 channels
  x = blocks::max_pool(b, "pool1", x, Window2d::square(2, 2));
  x = mini_inception(b, "inception_b", x, 32, 32, 48, 16);  // 96 channels
  x = blocks::max_pool(b, "pool2", x, Window2d::square(2, 2));
  x = mini_inception(b, "inception_c", x, 48, 48, 64, 16);  // 128 channels
  x = blocks::global_avg_pool(b, "pool3", x);
  x = blocks::linear(b, "classifier", x, c.classes);
  blocks::loss(b, "loss", x, 1.f, c.label_smoothing);
  return b.build(c.memory);
}

}  // namespace dptrain
