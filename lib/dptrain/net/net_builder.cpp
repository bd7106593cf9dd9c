#include "dptrain/net/net_builder.hpp"

#include <algorithm>
#include <set>

#include "dptrain/layers/softmax_cross_entropy.hpp"

namespace dptrain {

NetBuilder::NetBuilder(Backend& backend, const Shape& images) : net_(new Net) {
  DPTRAIN_CHECK(images.rank() == 4, "a network's input must be [N,C,H,W] but is ", images.to_string());
  net_->backend_ = &backend;
  net_->nodes_.resize(2);
  net_->nodes_[kImages].shape = images;
  net_->nodes_[kLabels].shape = Shape{images[0]};
}

int NetBuilder::add(std::unique_ptr<Layer> layer, std::vector<int> inputs) {
  DPTRAIN_CHECK(net_ != nullptr, "NetBuilder: build() was already called");
  auto& nodes = net_->nodes_;
  std::set<std::string> names;
  for (const auto& n : nodes) {
    if (n.layer) names.insert(n.layer->name());
  }
  DPTRAIN_CHECK(!names.contains(layer->name()), "two layers are named '", layer->name(), "'");
  std::vector<Shape> shapes;
  for (int i : inputs) {
    DPTRAIN_CHECK(i >= 0 && i < static_cast<int>(nodes.size()), layer->name(), ": input node ", i, " does not exist");
    DPTRAIN_CHECK(std::count(inputs.begin(), inputs.end(), i) == 1, layer->name(), ": reads node ", i, " twice");
    shapes.push_back(nodes[static_cast<std::size_t>(i)].shape);
  }
  Net::Node node;
  node.shape = layer->setup(shapes, *net_->backend_);
  for (int i : inputs) ++nodes[static_cast<std::size_t>(i)].consumers;
  node.layer = std::move(layer);
  node.inputs = std::move(inputs);
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size()) - 1;
}

int NetBuilder::add_loss(std::unique_ptr<Layer> layer, int logits, bool training_only) {
  DPTRAIN_CHECK(dynamic_cast<SoftmaxCrossEntropy*>(layer.get()) != nullptr, layer->name(),
                ": only softmax_cross_entropy layers can be losses");
  const int id = add(std::move(layer), {logits, kLabels});
  net_->nodes_.back().is_loss = true;
  net_->nodes_.back().training_only = training_only;
  if (net_->main_loss_ < 0) {
    DPTRAIN_CHECK(!training_only, net_->nodes_.back().layer->name(), ": the main loss cannot be training-only");
    net_->main_loss_ = id;
  }
  return id;
}

const Shape& NetBuilder::shape(int node) const {
  DPTRAIN_CHECK(node >= 0 && node < static_cast<int>(net_->nodes_.size()), "node ", node, " does not exist");
  return net_->nodes_[static_cast<std::size_t>(node)].shape;
}

std::unique_ptr<Net> NetBuilder::build() {
  DPTRAIN_CHECK(net_ && net_->main_loss_ >= 0, "a network needs a loss layer");
  auto& nodes = net_->nodes_;
  Backend& backend = *net_->backend_;
  // A layer is training-only when every layer reading it is (walk consumers before producers).
  std::vector<int> readers(nodes.size(), 0), training_readers(nodes.size(), 0);
  for (std::size_t i = nodes.size(); i-- > 2;) {
    auto& node = nodes[i];
    if (!node.is_loss) node.training_only = readers[i] > 0 && readers[i] == training_readers[i];
    for (int j : node.inputs) {
      ++readers[static_cast<std::size_t>(j)];
      if (node.training_only) ++training_readers[static_cast<std::size_t>(j)];
    }
  }
  // Images are an activation (the first layer reads them), plain so that a host batch copies in.
  nodes[kImages].output = backend.allocate(nodes[kImages].shape, activation_dtype(backend.precision()));
  nodes[kLabels].output = Tensor::zeros(nodes[kLabels].shape, DType::i32);  // labels stay on the host
  for (std::size_t i = 2; i < nodes.size(); ++i) {
    auto& node = nodes[i];
    // Losses are one plain f32 value (read precisely in every precision); everything else is kept in
    // the backend's fastest layout and activation type.
    node.output = node.is_loss ? backend.allocate(node.shape) : backend.allocate_activation(node.shape);
    node.needs_grad = !node.is_loss;
    if (node.needs_grad) node.grad = backend.allocate_activation(node.shape);
  }
  net_->scratch_.resize(nodes.size());
  for (std::size_t i = 2; i < nodes.size(); ++i) {
    if (nodes[i].consumers > 1) net_->scratch_[i] = backend.allocate_activation(nodes[i].shape);
  }
  return std::move(net_);
}

}  // namespace dptrain
