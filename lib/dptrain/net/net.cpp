#include "dptrain/net/net.hpp"

#include <algorithm>
#include <string_view>

#include "dptrain/layers/softmax_cross_entropy.hpp"

namespace dptrain {

double Net::forward(const PassContext& ctx) {
  run_forward(ctx);
  return total_loss();
}

void Net::run_forward(const PassContext& ctx) {
  DPTRAIN_CHECK(memory_.allocate, "this network was built for a memory estimate and has no activations to run with");
  DPTRAIN_CHECK(!ctx.training || purpose() == NetPurpose::training,
                "this network was built for inference (forward only, no memory for a training pass)");
  std::vector<const Tensor*> in;
  for (std::size_t i = 2; i < nodes_.size(); ++i) {
    Node& node = nodes_[i];
    if ((node.training_only && !ctx.training) || node.forward_fused) continue;
    in.clear();
    for (int j : node.inputs) in.push_back(&nodes_[static_cast<std::size_t>(j)].output);
    for (StepHooks* hooks : step_hooks_) hooks->layer_starting(i, false);
    node.layer->forward(ctx, in, node.output);
    for (StepHooks* hooks : step_hooks_) hooks->layer_finished(i, false);
  }
  last_training_ = ctx.training;
}

Net::PendingScores Net::start_scores() const {
  std::vector<const Tensor*> read;
  PendingScores pending;
  for (const Node& node : nodes_) {
    if (!node.is_loss || (node.training_only && !last_training_)) continue;
    read.push_back(&node.output);
    pending.weights_.push_back(static_cast<const SoftmaxCrossEntropy&>(*node.layer).loss_weight());
  }
  const Tensor& correct =
      static_cast<const SoftmaxCrossEntropy&>(*nodes_[static_cast<std::size_t>(main_loss_)].layer).correct();
  pending.counted_ = correct.defined();
  if (pending.counted_) read.push_back(&correct);
  pending.read_ = backend_->start_to_host_together(read);
  return pending;
}

Net::Scores Net::PendingScores::wait() {
  DPTRAIN_CHECK(read_ != nullptr, "Net::PendingScores::wait() twice, or on scores never started");
  const std::vector<Tensor> host = read_->wait();
  read_.reset();
  Scores s;
  for (std::size_t i = 0; i < weights_.size(); ++i)
    s.loss += weights_[i] * static_cast<double>(host[i].data<float>()[0]);
  if (counted_) {
    s.top1 = static_cast<std::int64_t>(host.back().data<float>()[0]);
    s.top5 = static_cast<std::int64_t>(host.back().data<float>()[1]);
  }
  return s;
}

void Net::set_loss_scale(float scale) {
  for (Node& node : nodes_) {
    if (node.is_loss) static_cast<SoftmaxCrossEntropy&>(*node.layer).set_loss_scale(scale);
  }
}

void Net::set_counted_rows(std::int64_t rows) {
  for (Node& node : nodes_) {
    if (node.is_loss) static_cast<SoftmaxCrossEntropy&>(*node.layer).set_counted_rows(rows);
  }
}

void Net::backward() {
  DPTRAIN_CHECK(purpose() == NetPurpose::training, "this network was built for inference and has no backward pass");
  DPTRAIN_CHECK(last_training_, "backward() needs a training forward pass first");
  std::vector<bool> written(nodes_.size(), false);
  std::vector<const Tensor*> in;
  std::vector<Tensor*> din;
  std::vector<std::size_t> to_sum;
  for (std::size_t i = nodes_.size(); i-- > 2;) {
    Node& node = nodes_[i];
    if (node.backward_fused) {
      // Its producer's backward masks this gradient by its output (the same memory, in place): nothing
      // runs here, and the producer's gradient is this node's, complete.
      if (!written[i]) backend_->fill(node.grad, 0.f);  // a branch no loss reads
      written[static_cast<std::size_t>(node.inputs[0])] = true;
      continue;
    }
    for (StepHooks* hooks : step_hooks_) hooks->layer_starting(i, true);
    if (!node.is_loss && !written[i]) backend_->fill(node.grad, 0.f);  // a branch no loss reads
    in.clear();
    din.clear();
    to_sum.clear();
    for (std::size_t n = 0; n < node.inputs.size(); ++n) {
      const auto k = static_cast<std::size_t>(node.inputs[n]);
      in.push_back(&nodes_[k].output);
      if (!nodes_[k].needs_grad) {
        din.push_back(nullptr);
      } else if (!written[k]) {
        DPTRAIN_CHECK(!node.accumulates_input[n], "node ", i, " adds to the gradient of node ", k,
                      ", which nothing wrote before it");
        din.push_back(&nodes_[k].grad);  // the first consumer writes in place
        written[k] = true;
      } else if (node.accumulates_input[n]) {
        din.push_back(&nodes_[k].grad);  // a later consumer that adds to it itself
      } else {
        din.push_back(&node.input_scratch[n]);  // later consumers add theirs after the backward call
        to_sum.push_back(n);
      }
    }
    node.layer->backward(in, node.output, node.grad, din);
    for (std::size_t n : to_sum) {
      backend_->axpby(1.f, node.input_scratch[n], 1.f, nodes_[static_cast<std::size_t>(node.inputs[n])].grad);
    }
    for (StepHooks* hooks : step_hooks_) hooks->layer_finished(i, true);
    for (StepHooks* hooks : step_hooks_) {
      for (Parameter& p : node.layer->parameters()) hooks->gradient_ready(p);
    }
  }
}

void Net::add_step_hooks(StepHooks& hooks) {
  DPTRAIN_CHECK(std::find(step_hooks_.begin(), step_hooks_.end(), &hooks) == step_hooks_.end(),
                "Net::add_step_hooks: these hooks are added already");
  step_hooks_.push_back(&hooks);
}

void Net::remove_step_hooks(const StepHooks& hooks) { std::erase(step_hooks_, &hooks); }

const Tensor& Net::probabilities() const {
  return static_cast<const SoftmaxCrossEntropy&>(*nodes_[static_cast<std::size_t>(main_loss_)].layer).probabilities();
}

const Tensor& Net::logits() const {
  DPTRAIN_CHECK(memory_.purpose == NetPurpose::inference || !memory_.plan,
                "Net::logits: a planned training net does not keep its logits after the forward pass");
  const Node& loss = nodes_[static_cast<std::size_t>(main_loss_)];
  return nodes_[static_cast<std::size_t>(loss.inputs.at(0))].output;
}

std::vector<Parameter*> Net::classifier_parameters() {
  std::vector<Parameter*> out;
  for (const Node& node : nodes_) {
    if (!node.is_loss) continue;
    Node& producer = nodes_[static_cast<std::size_t>(node.inputs.at(0))];
    if (!producer.layer) continue;
    for (Parameter& p : producer.layer->parameters()) out.push_back(&p);
  }
  return out;
}

std::vector<double> Net::losses() const {
  std::vector<double> out;
  for (const Node& node : nodes_) {
    if (node.is_loss && (!node.training_only || last_training_))
      out.push_back(backend_->to_host(node.output).data<float>()[0]);
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

std::vector<PlanNode> Net::plan_nodes_for(NetPurpose purpose, DType activation) const {
  std::vector<PlanNode> out(nodes_.size());
  const bool training = purpose == NetPurpose::training;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    PlanNode& p = out[i];
    p.inputs = node.inputs;
    p.bytes = static_cast<std::size_t>(node.shape.numel()) * size_of(activation);
    // The images (filled from the host between steps), the labels (host) and the losses (one value,
    // read after the step) keep buffers of their own.
    p.planned = node.layer != nullptr && !node.is_loss;
    p.runs = node.layer != nullptr && (training || !node.training_only);
    p.needs_grad = training && p.planned;
    if (!node.layer) continue;
    p.backward_reads_output = node.layer->backward_reads_output();
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      p.backward_reads_input.push_back(node.layer->backward_reads_input(k));
      p.backward_accumulates_input.push_back(node.layer->can_accumulate_input_gradient(k));
    }
    p.in_place = node.layer->runs_in_place();
    // A ReLU after a layer that can do its backward (batch norm): fused when the planner runs it in place.
    if (std::string_view(node.layer->kind()) == "relu" && !node.inputs.empty()) {
      const Node& producer = nodes_[static_cast<std::size_t>(node.inputs[0])];
      p.backward_by_producer = producer.layer != nullptr && producer.layer->can_fuse_relu_backward();
    }
  }
  return out;
}

void Net::initialize(std::uint64_t seed) {
  for (Node& node : nodes_) {
    if (node.layer) node.layer->initialize(seed);
  }
}

}  // namespace dptrain
