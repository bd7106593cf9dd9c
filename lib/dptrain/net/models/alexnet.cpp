// AlexNet, one tower and no LRN (torchvision's variant): 61,100,840 parameters at 224x224.
#include "dptrain/net/blocks.hpp"
#include "dptrain/net/models/registry.hpp"

namespace dptrain {

std::unique_ptr<Net> build_alexnet(Backend& backend, const ModelConfig& c) {
  NetBuilder b(backend, Shape{c.batch, c.channels, c.image_size, c.image_size});
  const WeightInit init = WeightInit::xavier_uniform;
  int x = blocks::conv_relu(b, "conv1", NetBuilder::kImages, 64, Window2d::square(11, 4, 2), init);
  x = blocks::max_pool(b, "pool1", x, Window2d::square(3, 2));
  x = blocks::conv_relu(b, "conv2", x, 192, Window2d::square(5, 1, 2), init);
  x = blocks::max_pool(b, "pool2", x, Window2d::square(3, 2));
  x = blocks::conv_relu(b, "conv3", x, 384, Window2d::square(3, 1, 1), init);
  x = blocks::conv_relu(b, "conv4", x, 256, Window2d::square(3, 1, 1), init);
  x = blocks::conv_relu(b, "conv5", x, 256, Window2d::square(3, 1, 1), init);
  x = blocks::max_pool(b, "pool5", x, Window2d::square(3, 2));
  x = blocks::dropout(b, "drop6", x, 0.5f);
  x = blocks::relu(b, "fc6/relu", blocks::linear(b, "fc6", x, 4096, init));
  x = blocks::dropout(b, "drop7", x, 0.5f);
  x = blocks::relu(b, "fc7/relu", blocks::linear(b, "fc7", x, 4096, init));
  x = blocks::linear(b, "fc8", x, c.classes, init);
  blocks::loss(b, "loss", x, 1.f, c.label_smoothing);
  return b.build(c.memory);
}

}  // namespace dptrain
