#include "dptrain/net/net.hpp"

#include "dptrain/layers/softmax_cross_entropy.hpp"

namespace dptrain {

double Net::forward(const PassContext& ctx) {
  run_forward(ctx);
  return total_loss();
}

void Net::run_forward(const PassContext& ctx) {
  std::vector<const Tensor*> in;
  for (std::size_t i = 2; i < nodes_.size(); ++i) {
    Node& node = nodes_[i];
    if (node.training_only && !ctx.training) continue;
    in.clear();
    for (int j : node.inputs) in.push_back(&nodes_[static_cast<std::size_t>(j)].output);
    node.layer->forward(ctx, in, node.output);
  }
  last_training_ = ctx.training;
}

double Net::total_loss() const {
  double total = 0;
  for (const Node& node : nodes_) {
    if (!node.is_loss || (node.training_only && !last_training_)) continue;
    const auto& loss = static_cast<const SoftmaxCrossEntropy&>(*node.layer);
    total += loss.loss_weight() * static_cast<double>(backend_->to_host(node.output).data<float>()[0]);
  }
  return total;
}

void Net::set_loss_scale(float scale) {
  for (Node& node : nodes_) {
    if (node.is_loss) static_cast<SoftmaxCrossEntropy&>(*node.layer).set_loss_scale(scale);
  }
}

void Net::backward() {
  std::vector<bool> written(nodes_.size(), false);
  std::vector<const Tensor*> in;
  std::vector<Tensor*> din;
  std::vector<int> to_sum;
  for (std::size_t i = nodes_.size(); i-- > 2;) {
    Node& node = nodes_[i];
    if (!node.is_loss && !written[i]) backend_->fill(node.grad, 0.f);  // a branch no loss reads
    in.clear();
    din.clear();
    to_sum.clear();
    for (int j : node.inputs) {
      const auto k = static_cast<std::size_t>(j);
      in.push_back(&nodes_[k].output);
      if (!nodes_[k].needs_grad) {
        din.push_back(nullptr);
      } else if (!written[k]) {
        din.push_back(&nodes_[k].grad);  // the first consumer writes in place
        written[k] = true;
      } else {
        din.push_back(&scratch_[k]);  // later consumers add theirs after the backward call
        to_sum.push_back(j);
      }
    }
    node.layer->backward(in, node.output, node.grad, din);
    for (int j : to_sum) {
      const auto k = static_cast<std::size_t>(j);
      backend_->axpby(1.f, scratch_[k], 1.f, nodes_[k].grad);
    }
    if (gradient_ready_) {
      for (Parameter& p : node.layer->parameters()) gradient_ready_(p);
    }
  }
}

const Tensor& Net::probabilities() const {
  return static_cast<const SoftmaxCrossEntropy&>(*nodes_[static_cast<std::size_t>(main_loss_)].layer).probabilities();
}

std::vector<double> Net::losses() const {
  std::vector<double> out;
  for (const Node& node : nodes_) {
    if (node.is_loss) out.push_back(backend_->to_host(node.output).data<float>()[0]);
  }
  return out;
}

std::vector<Parameter*> Net::parameters() {
  std::vector<Parameter*> out;
  for (Node& node : nodes_) {
    if (!node.layer) continue;
    for (Parameter& p : node.layer->parameters()) out.push_back(&p);
  }
  return out;
}

std::vector<Buffer*> Net::buffers() {
  std::vector<Buffer*> out;
  for (Node& node : nodes_) {
    if (!node.layer) continue;
    for (Buffer& b : node.layer->buffers()) out.push_back(&b);
  }
  return out;
}

std::int64_t Net::parameter_count() {
  std::int64_t count = 0;
  for (Parameter* p : parameters()) count += p->value.numel();
  return count;
}

double Net::flops_per_sample() const {
  double flops = 0;
  for (const Node& node : nodes_) {
    if (node.layer) flops += node.layer->flops_per_sample();
  }
  return flops;
}

void Net::initialize(std::uint64_t seed) {
  for (Node& node : nodes_) {
    if (node.layer) node.layer->initialize(seed);
  }
}

}  // namespace dptrain
