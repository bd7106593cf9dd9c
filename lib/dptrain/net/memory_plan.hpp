#pragma once
// Where a Net's activations and activation gradients live. One step runs every node's forward in
// build order, then every node's backward in reverse; each tensor is needed only from the step that
// writes it to the last step that reads it (an output until the last forward or backward that reads
// it, a gradient from its first consumer's backward to its producer's backward). Tensors whose
// lifetimes do not overlap share memory: the plan places them at offsets of one arena, largest first,
// each at the lowest offset free over its whole lifetime (greedy by size, as TFLite's and MXNet's
// planners do). A ReLU (or a residual sum) writes over its input and its input gradient over its
// output gradient when nothing else reads them.
//
// The plan is computed from what each layer says its backward pass reads, so it is the same on every
// backend; verify_memory_plan() replays the schedule against the placement to prove that no tensor is
// overwritten while it is still to be read.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dptrain {

enum class NetPurpose : std::uint8_t {
  training,   // forward and backward (an evaluation forward may also run on it)
  inference,  // forward only, without the training-only nodes (auxiliary heads)
};

struct MemoryOptions {
  NetPurpose purpose = NetPurpose::training;
  // false: every tensor gets a buffer of its own, as before the planner (kept to check the planner
  // against: both must train bit-identically).
  bool plan = true;
  // false: plan, but allocate no activations (what-if estimates at any batch size); the net cannot run.
  bool allocate = true;
};

// What the planner knows of one node of a Net.
struct PlanNode {
  std::vector<int> inputs;
  std::size_t bytes = 0;    // of its output; a gradient has the same size
  bool planned = true;      // false: the node keeps a buffer of its own (images, labels, losses)
  bool runs = true;         // false: not run for this purpose (training-only nodes in inference)
  bool needs_grad = false;  // training: whether its consumers write a gradient for it
  bool backward_reads_output = false;
  std::vector<bool> backward_reads_input;  // per input
  bool in_place = false;  // forward may write over input 0, backward the input gradient over the output's
  // When in place: its backward may be done by its input 0's producer, inside that producer's own
  // backward (a ReLU fused into batch norm's), which then reads this node's output and gradient.
  bool backward_by_producer = false;
  // Per input: its backward can add that input's gradient to the one already there (cuDNN's beta = 1)
  // instead of writing it; a consumer that does not write the gradient first then needs no scratch.
  std::vector<bool> backward_accumulates_input;
};

class MemoryPlan {
 public:
  enum class Kind : std::uint8_t { output, gradient, scratch };
  // One tensor's place in the arena and the steps (inclusive) it lives in.
  struct Tensor {
    Kind kind;
    int node;           // whose output or gradient; for scratch, the node whose gradient it carries
    int consumer = -1;  // scratch: the consumer whose backward writes it before it is summed in
    std::size_t offset = 0, bytes = 0;
    int first = 0, last = 0;
    int storage = -1;  // tensors sharing a storage (in place) share one place
  };

  // Steps: node i's forward is step i, its backward step 2n - i (n nodes), so backward runs in reverse.
  static int forward_step(int node) { return node; }
  int backward_step(int node) const { return 2 * node_count_ - node; }

  const std::vector<Tensor>& tensors() const { return tensors_; }
  // Index into tensors(), or -1 when the node has none (not planned, not run, or no gradient).
  int output_of(int node) const { return output_of_[static_cast<std::size_t>(node)]; }
  int gradient_of(int node) const { return gradient_of_[static_cast<std::size_t>(node)]; }
  // The scratch the backward of `consumer` writes its `input`-th input's gradient into, or -1 when it
  // writes the gradient itself (it is that gradient's first writer).
  int scratch_of(int consumer, std::size_t input) const;
  // Whether that consumer's backward adds its gradient of that input straight into the input's
  // gradient (written before by a later consumer) instead of into a scratch.
  bool accumulates(int consumer, std::size_t input) const;
  // Whether the node's output (and gradient) is its input 0's memory.
  bool in_place(int node) const { return in_place_[static_cast<std::size_t>(node)]; }
  // Whether the node (in place, PlanNode::backward_by_producer) has its backward done by its input 0's
  // producer: its output then lives until that producer's backward.
  bool backward_by_producer(int node) const { return backward_by_producer_[static_cast<std::size_t>(node)]; }

  NetPurpose purpose() const { return purpose_; }
  std::size_t arena_bytes() const { return arena_bytes_; }
  // What one buffer per planned tensor takes (the scheme before the planner): outputs and, in
  // training, gradients and one scratch per node read by several layers.
  std::size_t unplanned_bytes() const { return unplanned_bytes_; }
  std::size_t alignment() const { return alignment_; }

 private:
  friend MemoryPlan plan_memory(std::span<const PlanNode>, NetPurpose, std::size_t);
  int node_count_ = 0;
  NetPurpose purpose_ = NetPurpose::training;
  std::vector<Tensor> tensors_;
  std::vector<int> output_of_, gradient_of_;
  std::vector<std::vector<int>> scratch_of_;    // per consumer, per input
  std::vector<std::vector<bool>> accumulates_;  // per consumer, per input
  std::vector<bool> in_place_, backward_by_producer_;
  std::size_t arena_bytes_ = 0, unplanned_bytes_ = 0, alignment_ = 256;
};

// Offsets are multiples of `alignment` (256 suits cuDNN and oneDNN's vector loads alike).
MemoryPlan plan_memory(std::span<const PlanNode> nodes, NetPurpose purpose, std::size_t alignment = 256);

// Replays one step (forward, then backward for training) event by event against the plan's offsets:
// every read must find the bytes its tensor's last write left, and within one layer call no written
// tensor may overlap another tensor of the call except the declared in-place pairs. Returns "" or a
// description of the first violation.
std::string verify_memory_plan(std::span<const PlanNode> nodes, const MemoryPlan& plan);

}  // namespace dptrain
