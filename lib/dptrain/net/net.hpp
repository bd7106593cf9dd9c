#pragma once
// A network: a DAG of layers kept in topological order. Node 0 is the images, node 1 the labels.
// Forward runs the nodes in order; backward runs them in reverse, summing the gradients of tensors
// that feed several layers (an inception module's input), and tells a listener as soon as a layer's
// parameter gradients are final, which is when the gradient reducer may start sending them.
#include <memory>
#include <string>
#include <vector>

#include "dptrain/layers/layer.hpp"
#include "dptrain/net/memory_plan.hpp"
#include "dptrain/net/step_hooks.hpp"

namespace dptrain {

class NetBuilder;

class Net {
 public:
  // The images [N,C,H,W] and labels [N] of the next step.
  Tensor& images() { return nodes_[0].output; }
  Tensor& labels() { return nodes_[1].output; }
  const Shape& image_shape() const { return nodes_[0].shape; }

  // Runs the forward pass and returns the weighted sum of the losses (read on the host).
  double forward(const PassContext& ctx);
  // The forward pass without reading anything back: on a GPU the host only queues the work.
  void run_forward(const PassContext& ctx);
  // What the latest forward scored, read back in one transfer (one wait for the device): the
  // weighted sum of its losses, and how many of the main classifier's counted samples have their
  // label in its top 1 and top 5 (top min(5, classes)).
  struct Scores {
    double loss = 0;
    std::int64_t top1 = 0, top5 = 0;
  };
  // The same read queued now and taken later (PendingScores::wait): the host may queue the next
  // step's work meanwhile, and the values are this forward's, whatever ran after it. A PendingScores
  // must not outlive the net's backend.
  class PendingScores {
   public:
    Scores wait();

   private:
    friend class Net;
    std::unique_ptr<PendingRead> read_;
    std::vector<float> weights_;  // of each loss read, in order; the top-k counts follow when counted_
    bool counted_ = false;
  };
  PendingScores start_scores() const;
  Scores scores() const { return start_scores().wait(); }
  // scores().loss.
  double total_loss() const { return scores().loss; }
  // Backward from the losses; parameter gradients are written (not accumulated), multiplied by the
  // loss scale.
  void backward();
  void set_loss_scale(float scale);
  // The losses of the next forwards average the batch's first `rows` samples only (the rest pad a
  // short final batch of an evaluation); negative: all of them, as after construction.
  void set_counted_rows(std::int64_t rows);
  // `hooks` is called at the points of every training step (net/step_hooks.hpp) until removed; it
  // must outlive the net or be removed first.
  void add_step_hooks(StepHooks& hooks);
  void remove_step_hooks(const StepHooks& hooks);
  const std::vector<StepHooks*>& step_hooks() const { return step_hooks_; }

  // The main classifier's probabilities [N, classes] from the latest forward.
  const Tensor& probabilities() const;
  // The main classifier's logits [N, classes] from the latest forward of an inference net (in a
  // training net a node after the loss, an auxiliary head, may reuse their memory): on the device.
  const Tensor& logits() const;
  // The parameters of the layers whose outputs are the logits of a loss (the classifier and any
  // auxiliary classifier): the tensors whose shape follows the class count.
  std::vector<Parameter*> classifier_parameters();
  // The loss of each loss layer from the latest forward, unweighted, in build order (the training-only
  // ones only after a training forward).
  std::vector<double> losses() const;

  std::vector<Parameter*> parameters();  // in topological (build) order
  std::vector<Buffer*> buffers();
  std::int64_t parameter_count();
  double flops_per_sample() const;  // forward
  void initialize(std::uint64_t seed);

  struct Node {
    std::unique_ptr<Layer> layer;  // null for the two inputs
    std::vector<int> inputs;
    Shape shape;
    Tensor output;  // undefined for a training-only node of an inference net
    Tensor grad;    // d(loss)/d(output), summed over consumers
    // Per input: where this node's backward writes that input's gradient when another consumer wrote
    // it first (then it is summed in); undefined where this node is the first writer.
    std::vector<Tensor> input_scratch;
    // Per input: this node's backward adds that input's gradient to the one another consumer wrote
    // first (MemoryPlan::accumulates: Layer::accumulate_input_gradient), with no scratch.
    std::vector<bool> accumulates_input;
    int consumers = 0;  // how many layer inputs read this node
    bool needs_grad = false;
    bool is_loss = false;
    bool training_only = false;   // an auxiliary head: skipped when not training
    bool forward_fused = false;   // a ReLU whose producer applies it (its forward is skipped)
    bool backward_fused = false;  // and whose producer's backward does its backward (skipped too)
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  Backend& backend() { return *backend_; }

  NetPurpose purpose() const { return memory_.purpose; }
  // The plan of the activations (also made with MemoryOptions::plan off, where it is not used, so
  // `inspect` can compare); what was allocated is activation_bytes().
  const MemoryPlan& memory_plan() const { return plan_; }
  const std::vector<PlanNode>& plan_nodes() const { return plan_nodes_; }
  // What the planner needs of each node, for a purpose and an activation type (which may differ from
  // the net's own: estimates for another precision).
  std::vector<PlanNode> plan_nodes_for(NetPurpose purpose, DType activation) const;
  std::size_t activation_bytes() const { return activation_bytes_; }
  bool memory_planned() const { return memory_.plan; }

 private:
  friend class NetBuilder;
  Backend* backend_ = nullptr;
  std::vector<Node> nodes_;
  int main_loss_ = -1;
  bool last_training_ = true;  // whether the latest forward ran the training-only nodes
  MemoryOptions memory_;
  std::vector<PlanNode> plan_nodes_;
  MemoryPlan plan_;
  Tensor arena_;  // the planned activations and gradients
  std::size_t activation_bytes_ = 0;
  std::vector<StepHooks*> step_hooks_;
};

}  // namespace dptrain
