// LeNet as in Caffe's MNIST example: no batch norm, so N ranks with batch b compute exactly what one
// rank with batch N*b computes (the distributed tests rely on it). 431,080 parameters on 28x28x1.
#include "dptrain/layers/convolution.hpp"
#include "dptrain/net/blocks.hpp"
#include "dptrain/net/models/registry.hpp"

namespace dptrain {

std::unique_ptr<Net> build_lenet(Backend& backend, const ModelConfig& c) {
  NetBuilder b(backend, Shape{c.batch, c.channels, c.image_size, c.image_size});
  const WeightInit xavier = WeightInit::xavier_uniform;
  int x = b.add(std::make_unique<Convolution>("conv1", 20, Window2d::square(5), true, xavier), {NetBuilder::kImages});
  x = blocks::max_pool(b, "pool1", x, Window2d::square(2, 2));
  x = b.add(std::make_unique<Convolution>("conv2", 50, Window2d::square(5), true, xavier), {x});
  x = blocks::max_pool(b, "pool2", x, Window2d::square(2, 2));
  x = blocks::linear(b, "ip1", x, 500, xavier);
  x = blocks::relu(b, "ip1/relu", x);
  x = blocks::linear(b, "ip2", x, c.classes, xavier);
  blocks::loss(b, "loss", x, 1.f, c.label_smoothing);
  return b.build(c.memory);
}

}  // namespace dptrain
