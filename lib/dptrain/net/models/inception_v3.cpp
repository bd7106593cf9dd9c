// Inception-V3 (Szegedy et al. 2015, "Rethinking the Inception Architecture") as torchvision builds it:
// convolutions without bias followed by batch norm (eps 1e-3) and ReLU, factorized 1x7/7x1 and
// 1x3/3x1 convolutions, 299x299 input. 23,834,568 parameters, 27,161,264 with the auxiliary head.
#include "dptrain/net/blocks.hpp"
#include "dptrain/net/models/registry.hpp"

namespace dptrain {
namespace {
constexpr float kEps = 1e-3f;

int conv(NetBuilder& b, const std::string& name, int x, int out, Window2d w) {
  return blocks::conv_bn_relu(b, name, x, out, w, /*conv_bias=*/false, kEps);
}
Window2d k(int kh, int kw, int stride = 1) { return Window2d{kh, kw, stride, stride, kh / 2, kw / 2}; }
Window2d valid(int kernel, int stride) { return Window2d::square(kernel, stride, 0); }
int avg3(NetBuilder& b, const std::string& name, int x) {
  return blocks::avg_pool(b, name, x, Window2d::square(3, 1, 1), PoolingKind::average_include_padding);
}

int inception_a(NetBuilder& b, const std::string& n, int x, int pool_features) {
  const int b1 = conv(b, n + "/branch1x1", x, 64, k(1, 1));
  int b5 = conv(b, n + "/branch5x5_1", x, 48, k(1, 1));
  b5 = conv(b, n + "/branch5x5_2", b5, 64, k(5, 5));
  int d = conv(b, n + "/branch3x3dbl_1", x, 64, k(1, 1));
  d = conv(b, n + "/branch3x3dbl_2", d, 96, k(3, 3));
  d = conv(b, n + "/branch3x3dbl_3", d, 96, k(3, 3));
  const int p = conv(b, n + "/branch_pool", avg3(b, n + "/pool", x), pool_features, k(1, 1));
  return blocks::concat(b, n + "/output", {b1, b5, d, p});
}

int inception_b(NetBuilder& b, const std::string& n, int x) {
  const int b3 = conv(b, n + "/branch3x3", x, 384, valid(3, 2));
  int d = conv(b, n + "/branch3x3dbl_1", x, 64, k(1, 1));
  d = conv(b, n + "/branch3x3dbl_2", d, 96, k(3, 3));
  d = conv(b, n + "/branch3x3dbl_3", d, 96, valid(3, 2));
  const int p = blocks::max_pool(b, n + "/pool", x, valid(3, 2));
  return blocks::concat(b, n + "/output", {b3, d, p});
}

int inception_c(NetBuilder& b, const std::string& n, int x, int c7) {
  const int b1 = conv(b, n + "/branch1x1", x, 192, k(1, 1));
  int s = conv(b, n + "/branch7x7_1", x, c7, k(1, 1));
  s = conv(b, n + "/branch7x7_2", s, c7, k(1, 7));
  s = conv(b, n + "/branch7x7_3", s, 192, k(7, 1));
  int d = conv(b, n + "/branch7x7dbl_1", x, c7, k(1, 1));
  d = conv(b, n + "/branch7x7dbl_2", d, c7, k(7, 1));
  d = conv(b, n + "/branch7x7dbl_3", d, c7, k(1, 7));
  d = conv(b, n + "/branch7x7dbl_4", d, c7, k(7, 1));
  d = conv(b, n + "/branch7x7dbl_5", d, 192, k(1, 7));
  const int p = conv(b, n + "/branch_pool", avg3(b, n + "/pool", x), 192, k(1, 1));
  return blocks::concat(b, n + "/output", {b1, s, d, p});
}

int inception_d(NetBuilder& b, const std::string& n, int x) {
  int t = conv(b, n + "/branch3x3_1", x, 192, k(1, 1));
  t = conv(b, n + "/branch3x3_2", t, 320, valid(3, 2));
  int s = conv(b, n + "/branch7x7x3_1", x, 192, k(1, 1));
  s = conv(b, n + "/branch7x7x3_2", s, 192, k(1, 7));
  s = conv(b, n + "/branch7x7x3_3", s, 192, k(7, 1));
  s = conv(b, n + "/branch7x7x3_4", s, 192, valid(3, 2));
  const int p = blocks::max_pool(b, n + "/pool", x, valid(3, 2));
  return blocks::concat(b, n + "/output", {t, s, p});
}

int inception_e(NetBuilder& b, const std::string& n, int x) {
  const int b1 = conv(b, n + "/branch1x1", x, 320, k(1, 1));
  const int t = conv(b, n + "/branch3x3_1", x, 384, k(1, 1));
  const int ta = conv(b, n + "/branch3x3_2a", t, 384, k(1, 3));
  const int tb = conv(b, n + "/branch3x3_2b", t, 384, k(3, 1));
  int d = conv(b, n + "/branch3x3dbl_1", x, 448, k(1, 1));
  d = conv(b, n + "/branch3x3dbl_2", d, 384, k(3, 3));
  const int da = conv(b, n + "/branch3x3dbl_3a", d, 384, k(1, 3));
  const int db = conv(b, n + "/branch3x3dbl_3b", d, 384, k(3, 1));
  const int p = conv(b, n + "/branch_pool", avg3(b, n + "/pool", x), 192, k(1, 1));
  return blocks::concat(b, n + "/output", {b1, ta, tb, da, db, p});
}

void auxiliary_head(NetBuilder& b, int x, const ModelConfig& c) {
  x = blocks::avg_pool(b, "AuxLogits/pool", x, valid(5, 3));
  x = conv(b, "AuxLogits/conv0", x, 128, k(1, 1));
  x = conv(b, "AuxLogits/conv1", x, 768, valid(5, 1));
  x = blocks::global_avg_pool(b, "AuxLogits/global_pool", x);
  x = blocks::linear(b, "AuxLogits/fc", x, c.classes);
  blocks::loss(b, "AuxLogits/loss", x, 0.4f, c.label_smoothing, true);
}
}  // namespace

std::unique_ptr<Net> build_inception_v3(Backend& backend, const ModelConfig& c) {
  NetBuilder b(backend, Shape{c.batch, c.channels, c.image_size, c.image_size});
  int x = conv(b, "Conv2d_1a_3x3", NetBuilder::kImages, 32, valid(3, 2));
  x = conv(b, "Conv2d_2a_3x3", x, 32, valid(3, 1));
  x = conv(b, "Conv2d_2b_3x3", x, 64, k(3, 3));
  x = blocks::max_pool(b, "maxpool1", x, valid(3, 2));
  x = conv(b, "Conv2d_3b_1x1", x, 80, k(1, 1));
  x = conv(b, "Conv2d_4a_3x3", x, 192, valid(3, 1));
  x = blocks::max_pool(b, "maxpool2", x, valid(3, 2));
  x = inception_a(b, "Mixed_5b", x, 32);
  x = inception_a(b, "Mixed_5c", x, 64);
  x = inception_a(b, "Mixed_5d", x, 64);
  x = inception_b(b, "Mixed_6a", x);
  x = inception_c(b, "Mixed_6b", x, 128);
  x = inception_c(b, "Mixed_6c", x, 160);
  x = inception_c(b, "Mixed_6d", x, 160);
  x = inception_c(b, "Mixed_6e", x, 192);
  const int aux_input = x;
  x = inception_d(b, "Mixed_7a", x);
  x = inception_e(b, "Mixed_7b", x);
  x = inception_e(b, "Mixed_7c", x);
  x = blocks::global_avg_pool(b, "avgpool", x);
  x = blocks::dropout(b, "dropout", x, 0.5f);
  x = blocks::linear(b, "fc", x, c.classes);
  blocks::loss(b, "loss", x, 1.f, c.label_smoothing);
  if (c.aux_heads) auxiliary_head(b, aux_input, c);
  return b.build(c.memory);
}

}  // namespace dptrain
