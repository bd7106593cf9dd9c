#include "dptrain/net/net_builder.hpp"

#include <algorithm>
#include <set>
#include <string_view>

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

std::unique_ptr<Net> NetBuilder::build(const MemoryOptions& memory) {
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
  const DType activation = activation_dtype(backend.precision());
  net_->memory_ = memory;
  net_->plan_nodes_ = net_->plan_nodes_for(memory.purpose, activation);
  net_->plan_ = plan_memory(net_->plan_nodes_, memory.purpose);
  const MemoryPlan& plan = net_->plan_;
  const bool training = memory.purpose == NetPurpose::training;
  for (std::size_t i = 2; i < nodes.size(); ++i) nodes[i].needs_grad = training && !nodes[i].is_loss;
  if (!memory.allocate) return std::move(net_);  // an estimate: the plan without its memory
  // A ReLU in place on a convolution's, a batch norm's or a sum's output is applied by that layer
  // itself (one pass over the output instead of two). Its backward runs from the fused output, or, where
  // the planner kept that output for it (MemoryPlan::backward_by_producer: batch norm), inside the
  // producer's backward.
  for (std::size_t i = 2; i < nodes.size() && memory.plan; ++i) {
    auto& node = nodes[i];
    if (!plan.in_place(static_cast<int>(i)) || std::string_view(node.layer->kind()) != "relu") continue;
    auto& producer = nodes[static_cast<std::size_t>(node.inputs[0])];
    node.forward_fused = producer.layer != nullptr && producer.layer->fuse_relu();
    if (plan.backward_by_producer(static_cast<int>(i))) {
      DPTRAIN_CHECK(node.forward_fused, "the memory plan fuses the backward of node ", i,
                    " into its producer, which does not apply its forward");
      producer.layer->fuse_relu_backward();
      node.backward_fused = true;
    }
  }
  // Images are an activation (the first layer reads them), in the layout the backend's input path
  // writes (Backend::allocate_input).
  nodes[kImages].output = backend.allocate_input(nodes[kImages].shape);
  nodes[kLabels].output = Tensor::zeros(nodes[kLabels].shape, DType::i32);  // labels stay on the host
  for (auto& node : nodes) node.input_scratch.assign(node.inputs.size(), Tensor());
  // A later consumer whose backward can add an input's gradient in does so (planned or not, so the two
  // train the same bits).
  for (std::size_t i = 2; i < nodes.size(); ++i) {
    auto& node = nodes[i];
    node.accumulates_input.assign(node.inputs.size(), false);
    for (std::size_t k = 0; k < node.inputs.size() && training; ++k) {
      if (!plan.accumulates(static_cast<int>(i), k)) continue;
      node.layer->accumulate_input_gradient(k);
      node.accumulates_input[k] = true;
    }
  }
  if (memory.plan) {
    net_->arena_ =
        backend.allocate(Shape{static_cast<std::int64_t>(std::max<std::size_t>(plan.arena_bytes(), 1))}, DType::u8);
    net_->activation_bytes_ = plan.arena_bytes();
  }
  auto planned = [&](int index, const Shape& shape) {
    const auto& t = plan.tensors()[static_cast<std::size_t>(index)];
    return net_->arena_.view_bytes(t.offset, shape, activation, backend.activation_layout(shape));
  };
  for (std::size_t i = 2; i < nodes.size(); ++i) {
    auto& node = nodes[i];
    const int id = static_cast<int>(i);
    if (node.is_loss) {
      // Losses are one plain f32 value (read precisely in every precision).
      if (training || !node.training_only) node.output = backend.allocate(node.shape);
      continue;
    }
    if (!memory.plan) {
      // One buffer per tensor, as before the planner, kept in the backend's fastest layout.
      node.output = backend.allocate_activation(node.shape);
      if (node.needs_grad) node.grad = backend.allocate_activation(node.shape);
      net_->activation_bytes_ += node.output.bytes() + node.grad.bytes();
      continue;
    }
    if (plan.output_of(id) >= 0) node.output = planned(plan.output_of(id), node.shape);
    if (node.needs_grad) node.grad = planned(plan.gradient_of(id), node.shape);
  }
  // Where a later consumer's backward writes an input's gradient before it is summed in.
  for (std::size_t j = 2; j < nodes.size() && training; ++j) {
    if (!nodes[j].needs_grad) continue;
    Tensor shared;  // the old scheme: one per node read by several layers
    if (!memory.plan && nodes[j].consumers > 1) {
      shared = backend.allocate_activation(nodes[j].shape);
      net_->activation_bytes_ += shared.bytes();
    }
    for (std::size_t i = j + 1; i < nodes.size(); ++i) {
      for (std::size_t k = 0; k < nodes[i].inputs.size(); ++k) {
        if (nodes[i].inputs[k] != static_cast<int>(j) || nodes[i].accumulates_input[k]) continue;
        const int s = memory.plan ? plan.scratch_of(static_cast<int>(i), k) : -1;
        nodes[i].input_scratch[k] = s >= 0 ? planned(s, nodes[j].shape) : shared;
      }
    }
  }
  return std::move(net_);
}

}  // namespace dptrain
