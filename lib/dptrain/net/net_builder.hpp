#pragma once
// Builds a Net layer by layer. Each layer is set up as it is added, so a model's code can read the
// shape of any tensor while it builds (what a flatten or a classifier needs).
#include "dptrain/net/net.hpp"

namespace dptrain {

class NetBuilder {
 public:
  // `images` is [N, C, H, W]; the labels are int32 [N].
  NetBuilder(Backend& backend, const Shape& images);

  static constexpr int kImages = 0;
  static constexpr int kLabels = 1;

  // Adds a layer reading the given nodes; returns the new node.
  int add(std::unique_ptr<Layer> layer, std::vector<int> inputs);
  // Adds a loss layer (its output is a one-element loss). The first one added is the main classifier,
  // whose probabilities accuracy is measured on. A training-only loss (an auxiliary head) and every
  // layer that feeds only such losses are skipped in evaluation.
  int add_loss(std::unique_ptr<Layer> layer, int logits, bool training_only = false);

  const Shape& shape(int node) const;
  // Plans the activations' memory (see memory_plan.hpp) and allocates it.
  std::unique_ptr<Net> build(const MemoryOptions& memory = {});

 private:
  std::unique_ptr<Net> net_;
};

}  // namespace dptrain
