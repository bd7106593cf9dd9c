#include "dptrain/net/models/registry.hpp"

#include "dptrain/core/error.hpp"

namespace dptrain {

const std::vector<ModelInfo>& model_zoo() {
  static const std::vector<ModelInfo> zoo = {
      {"lenet", "LeNet-5 as in Caffe's MNIST example (no batch norm)", 28, build_lenet},
      {"inception-mini", "two small inception modules with batch norm, for 28-32 px images", 28, build_inception_mini},
      {"alexnet", "AlexNet, single tower without LRN (as torchvision)", 224, build_alexnet},
      {"googlenet", "GoogLeNet (Szegedy et al. 2014) as Caffe's bvlc_googlenet, with LRN and two auxiliary heads", 224,
       build_googlenet},
      {"inception-bn", "BN-Inception (Ioffe & Szegedy 2015) as MXNet's Inception-BN", 224, build_inception_bn},
      {"inception-v3", "Inception-V3 (Szegedy et al. 2015) as torchvision, with the auxiliary head", 299,
       build_inception_v3},
      {"resnet50", "ResNet-50 v1.5 (stride on the 3x3 convolution)", 224, build_resnet50},
  };
  return zoo;
}

const ModelInfo& find_model(const std::string& name) {
  std::string known;
  for (const ModelInfo& m : model_zoo()) {
    if (m.name == name) return m;
    known += (known.empty() ? "" : ", ") + m.name;
  }
  throw Error("unknown model '" + name + "'; the models are: " + known);
}

std::unique_ptr<Net> build_model(const std::string& name, Backend& backend, ModelConfig config) {
  const ModelInfo& info = find_model(name);
  if (config.image_size == 0) config.image_size = info.default_image_size;
  DPTRAIN_CHECK(config.batch > 0 && config.channels > 0 && config.classes > 1, "model '", name,
                "': batch, channels and classes must be positive (and classes > 1)");
  return info.build(backend, config);
}

}  // namespace dptrain
