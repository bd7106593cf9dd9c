// GoogLeNet (Szegedy et al. 2014) as Caffe's bvlc_googlenet: convolutions with bias and ReLU, LRN after
// the first and second convolutions, pooling with Caffe's ceil rounding, and two auxiliary classifiers
// (loss weight 0.3, training only). Main path: 6,998,552 parameters.
#include "dptrain/layers/lrn.hpp"
#include "dptrain/net/blocks.hpp"
#include "dptrain/net/models/registry.hpp"

namespace dptrain {
namespace {
// Caffe's bvlc_googlenet fills every convolution and classifier with "xavier" (variance 1 / fan-in).
// He's variance of 2 / fan-in, which batch norm would absorb, compounds over 22 layers without it:
// the untrained net's loss was 19 instead of about 7 (ln(100) over the three heads, 100 classes).
constexpr WeightInit kInit = WeightInit::xavier_uniform;

struct Inception {
  int c1, c3r, c3, c5r, c5, proj;
};

int inception(NetBuilder& b, const std::string& name, int x, const Inception& m) {
  const int a = blocks::conv_relu(b, name + "/1x1", x, m.c1, Window2d::square(1), kInit);
  const int r3 = blocks::conv_relu(b, name + "/3x3_reduce", x, m.c3r, Window2d::square(1), kInit);
  const int c3 = blocks::conv_relu(b, name + "/3x3", r3, m.c3, Window2d::square(3, 1, 1), kInit);
  const int r5 = blocks::conv_relu(b, name + "/5x5_reduce", x, m.c5r, Window2d::square(1), kInit);
  const int c5 = blocks::conv_relu(b, name + "/5x5", r5, m.c5, Window2d::square(5, 1, 2), kInit);
  const int p = blocks::max_pool(b, name + "/pool", x, Window2d::square(3, 1, 1), Rounding::ceil);
  const int proj = blocks::conv_relu(b, name + "/pool_proj", p, m.proj, Window2d::square(1), kInit);
  return blocks::concat(b, name + "/output", {a, c3, c5, proj});
}

void auxiliary_head(NetBuilder& b, const std::string& name, int x, const ModelConfig& c) {
  x = blocks::avg_pool(b, name + "/ave_pool", x, Window2d::square(5, 3), PoolingKind::average_include_padding,
                       Rounding::ceil);
  x = blocks::conv_relu(b, name + "/conv", x, 128, Window2d::square(1), kInit);
  x = blocks::relu(b, name + "/fc/relu", blocks::linear(b, name + "/fc", x, 1024, kInit));
  x = blocks::dropout(b, name + "/drop_fc", x, 0.7f);
  x = blocks::linear(b, name + "/classifier", x, c.classes, kInit);
  blocks::loss(b, name + "/loss", x, 0.3f, c.label_smoothing, true);
}
}  // namespace

std::unique_ptr<Net> build_googlenet(Backend& backend, const ModelConfig& c) {
  NetBuilder b(backend, Shape{c.batch, c.channels, c.image_size, c.image_size});
  auto lrn = [&](const std::string& name, int x) { return b.add(std::make_unique<Lrn>(name, 5, 1e-4f, 0.75f), {x}); };
  int x = blocks::conv_relu(b, "conv1/7x7_s2", NetBuilder::kImages, 64, Window2d::square(7, 2, 3), kInit);
  x = blocks::max_pool(b, "pool1/3x3_s2", x, Window2d::square(3, 2), Rounding::ceil);
  x = lrn("pool1/norm1", x);
  x = blocks::conv_relu(b, "conv2/3x3_reduce", x, 64, Window2d::square(1), kInit);
  x = blocks::conv_relu(b, "conv2/3x3", x, 192, Window2d::square(3, 1, 1), kInit);
  x = lrn("conv2/norm2", x);
  x = blocks::max_pool(b, "pool2/3x3_s2", x, Window2d::square(3, 2), Rounding::ceil);
  x = inception(b, "inception_3a", x, {64, 96, 128, 16, 32, 32});
  x = inception(b, "inception_3b", x, {128, 128, 192, 32, 96, 64});
  x = blocks::max_pool(b, "pool3/3x3_s2", x, Window2d::square(3, 2), Rounding::ceil);
  x = inception(b, "inception_4a", x, {192, 96, 208, 16, 48, 64});
  const int aux1_input = x;
  x = inception(b, "inception_4b", x, {160, 112, 224, 24, 64, 64});
  x = inception(b, "inception_4c", x, {128, 128, 256, 24, 64, 64});
  x = inception(b, "inception_4d", x, {112, 144, 288, 32, 64, 64});
  const int aux2_input = x;
  x = inception(b, "inception_4e", x, {256, 160, 320, 32, 128, 128});
  x = blocks::max_pool(b, "pool4/3x3_s2", x, Window2d::square(3, 2), Rounding::ceil);
  x = inception(b, "inception_5a", x, {256, 160, 320, 32, 128, 128});
  x = inception(b, "inception_5b", x, {384, 192, 384, 48, 128, 128});
  x = blocks::global_avg_pool(b, "pool5/7x7_s1", x);
  x = blocks::dropout(b, "pool5/drop_7x7_s1", x, 0.4f);
  x = blocks::linear(b, "loss3/classifier", x, c.classes, kInit);
  blocks::loss(b, "loss3/loss3", x, 1.f, c.label_smoothing);
  if (c.aux_heads) {
    auxiliary_head(b, "loss1", aux1_input, c);
    auxiliary_head(b, "loss2", aux2_input, c);
  }
  return b.build(c.memory);
}

}  // namespace dptrain
