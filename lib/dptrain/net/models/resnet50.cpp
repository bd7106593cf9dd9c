// ResNet-50 v1.5 (He et al. 2015; the stride of a downsampling bottleneck sits on its 3x3 convolution,
// as in torchvision and NVIDIA's reference): 25,557,032 parameters.
#include "dptrain/net/blocks.hpp"
#include "dptrain/net/models/registry.hpp"

namespace dptrain {
namespace {
// The block's last batch norm joins the shortcut: relu(bn(conv3) + shortcut) in one layer
// (BatchNormJoin::add_relu). The downsampling shortcut is therefore built before conv3, so that it
// exists when that batch norm runs; its parameters keep their names.
int bottleneck(NetBuilder& b, const std::string& n, int x, int width, int stride) {
  const int out = width * 4;
  int y = blocks::conv_bn_relu(b, n + "/conv1", x, width, Window2d::square(1));
  y = blocks::conv_bn_relu(b, n + "/conv2", y, width, Window2d::square(3, stride, 1));
  int shortcut = x;
  if (stride != 1 || b.shape(x)[1] != out)
    shortcut = blocks::conv_bn(b, n + "/downsample", x, out, Window2d::square(1, stride));
  return blocks::conv_bn_add_relu(b, n + "/conv3", y, shortcut, out, Window2d::square(1));
}
}  // namespace

std::unique_ptr<Net> build_resnet50(Backend& backend, const ModelConfig& c) {
  NetBuilder b(backend, Shape{c.batch, c.channels, c.image_size, c.image_size});
  int x = blocks::conv_bn_relu(b, "conv1", NetBuilder::kImages, 64, Window2d::square(7, 2, 3));
  x = blocks::max_pool(b, "maxpool", x, Window2d::square(3, 2, 1));
  const int blocks_per_stage[4] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    for (int i = 0; i < blocks_per_stage[stage]; ++i) {
      const int stride = (stage > 0 && i == 0) ? 2 : 1;
      x = bottleneck(b, "layer" + std::to_string(stage + 1) + "." + std::to_string(i), x, 64 << stage, stride);
    }
  }
  x = blocks::global_avg_pool(b, "avgpool", x);
  x = blocks::linear(b, "fc", x, c.classes);
  blocks::loss(b, "loss", x, 1.f, c.label_smoothing);
  return b.build(c.memory);
}

}  // namespace dptrain
