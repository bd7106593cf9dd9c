#pragma once
// The model registry: every model by name, with the input size it was designed for.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dptrain/net/net.hpp"

namespace dptrain {

struct ModelConfig {
  int batch = 1;
  int channels = 3;
  int image_size = 0;  // 0: the model's default
  int classes = 1000;
  bool aux_heads = true;  // auxiliary classifiers (GoogLeNet, Inception-V3), trained with a small weight
  float label_smoothing = 0.f;
  MemoryOptions memory;  // training or inference, planned or one buffer per tensor
};

struct ModelInfo {
  std::string name;
  std::string description;
  int default_image_size;
  std::function<std::unique_ptr<Net>(Backend&, const ModelConfig&)> build;
};

const std::vector<ModelInfo>& model_zoo();
const ModelInfo& find_model(const std::string& name);  // throws an Error listing the known names
std::unique_ptr<Net> build_model(const std::string& name, Backend& backend, ModelConfig config);

// One per model file.
std::unique_ptr<Net> build_lenet(Backend&, const ModelConfig&);
std::unique_ptr<Net> build_inception_mini(Backend&, const ModelConfig&);
std::unique_ptr<Net> build_alexnet(Backend&, const ModelConfig&);
std::unique_ptr<Net> build_googlenet(Backend&, const ModelConfig&);
std::unique_ptr<Net> build_inception_bn(Backend&, const ModelConfig&);
std::unique_ptr<Net> build_inception_v3(Backend&, const ModelConfig&);
std::unique_ptr<Net> build_resnet50(Backend&, const ModelConfig&);

}  // namespace dptrain
