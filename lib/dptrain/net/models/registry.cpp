#include "dptrain/net/models/registry.hpp"

#include "dptrain/core/error.hpp"

namespace dptrain {

// Every model trains with `dptrain train`'s defaults (0.1 per 256 images, so 0.025 at batch 64; cosine;
// momentum 0.9; weight decay 1e-4) without diverging, which is how each chooses its initialisation:
//  - lenet and inception-mini, the models for 28x28 input, train 500 steps at batch 64 on Fashion-MNIST
//    in tests/e2e/model_defaults_e2e.sh. LeNet, without batch norm and with no ReLU after its
//    convolutions, takes Caffe's "xavier" as Caffe's LeNet does: with He's it reached NaN at step 13.
//  - inception-bn, inception-v3 and resnet50 follow every convolution with batch norm, so the scale of
//    the initial weights never reaches the next layer and the first steps' updates cannot compound;
//    0.1 per 256 is the rate Goyal et al. train ResNet-50 with. They keep He's.
//  - googlenet and alexnet have no batch norm, and He's variance of 2 / fan-in, made for a layer and
//    its ReLU, compounds through their max pools, AlexNet's dropout and the classifier: their
//    untrained loss at 224x224 with 100 classes is 29 and 31 (ln(100) = 4.6), and AlexNet fell to
//    chance at once and stayed there. They take Caffe's "xavier", as Caffe's bvlc_googlenet does.
//    Checked by hand on a synthetic 100-class set (`dptrain data synth`), batch 64, at the default
//    rate held constant (a long cosine run's first steps): AlexNet at 224x224 from 4.67 to 3.94 in 40
//    steps; GoogLeNet (three heads, 7.37 untrained) at 96x96 from 7.37 to 6.60 in 110 steps.
// "every model's untrained loss is about ln(classes)" (tests/unit/net/models_test.cpp) keeps every
// model's start where these checks had it.
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
