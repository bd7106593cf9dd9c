#pragma once
// SGD with momentum (optionally Nesterov) and weight decay, on the backend of the parameters. The
// momentum buffers are named like their parameters, for checkpoints.
#include <vector>

#include "dptrain/layers/layer.hpp"

namespace dptrain {

struct SgdConfig {
  float momentum = 0.9f;
  float weight_decay = 1e-4f;
  bool nesterov = false;
  bool decay_all = false;  // also decay biases and batch-norm parameters (off by default, as Goyal et al.)
};

class Sgd {
 public:
  Sgd(Backend& backend, std::vector<Parameter*> parameters, SgdConfig config);
  void step(float learning_rate);
  std::vector<Buffer>& momentum_buffers() { return velocity_; }
  const SgdConfig& config() const { return config_; }

 private:
  Backend& backend_;
  std::vector<Parameter*> parameters_;
  std::vector<Buffer> velocity_;
  SgdConfig config_;
  std::vector<SgdTensors> updates_;  // step()'s list for the backend, kept to reuse its memory
};

}  // namespace dptrain
