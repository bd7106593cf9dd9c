#pragma once
// A layer: the shapes, the parameters and which backend plans to call. It never touches memory
// itself, so the same layer runs on the CPU and on a GPU.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dptrain/backend/backend.hpp"

namespace dptrain {

// A trainable tensor with its gradient. `name` is stable ("inception_3a/1x1/weight"): checkpoints
// and the gradient reducer address parameters by it.
struct Parameter {
  std::string name;
  Tensor value;
  Tensor grad;
  bool decay = true;  // whether weight decay applies (off for biases and batch-norm scale and shift)
};

// A non-trainable state tensor saved in checkpoints (batch-norm running statistics).
struct Buffer {
  std::string name;
  Tensor value;
};

// What a forward pass needs to know beyond its inputs.
struct PassContext {
  bool training = true;
  std::uint64_t seed = 0;  // the run's seed (dropout masks)
  std::uint64_t epoch = 0;
  std::int64_t first_sample = 0;  // global index of this rank's first sample in the step
};

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  virtual const char* kind() const = 0;

  // Checks the input shapes, makes the plans and allocates parameters; returns the output shape.
  virtual Shape setup(std::span<const Shape> inputs, Backend& backend) = 0;
  virtual void forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) = 0;
  // Writes (not adds) the input gradients and the parameter gradients. A null entry in `dinputs`
  // means that input needs no gradient (the network's images, the labels).
  virtual void backward(std::span<const Tensor* const> inputs, const Tensor& output, const Tensor& doutput,
                        std::span<Tensor* const> dinputs) = 0;

  // What the backward pass reads besides the output gradient, which tells the memory planner how long
  // each activation must be kept. The defaults keep everything, so a new layer is safe before it is tuned.
  virtual bool backward_reads_input(std::size_t /*index*/) const { return true; }
  virtual bool backward_reads_output() const { return true; }
  // Whether forward may write its output over input 0 and backward its input gradient over its output
  // gradient (element-wise layers whose backward needs only the output, like ReLU).
  virtual bool runs_in_place() const { return false; }
  // Bytes the layer's plan keeps from a training forward to its backward (max-pooling indices, LRN
  // scales, dropout masks, probabilities), at most: for memory estimates.
  virtual std::size_t saved_state_bytes() const { return 0; }
  // Asks the layer to apply a ReLU to its output in its own forward pass, because a ReLU runs in place
  // on that output and can then skip its forward; returns whether it will.
  virtual bool fuse_relu() { return false; }
  // Whether the layer can also do such a ReLU's backward in its own (taking the ReLU's output gradient
  // and masking it by its output), so that the ReLU skips its backward too; and the request to, made
  // after fuse_relu() returned true (the memory planner then keeps the output until this backward).
  virtual bool can_fuse_relu_backward() const { return false; }
  virtual void fuse_relu_backward() {}
  // Whether the backward can add its gradient of an input to what that input's gradient holds
  // (cuDNN's beta = 1) instead of overwriting it, and the request to, made once when the net is built
  // for an input that another consumer's backward writes first: no scratch and no summing pass.
  virtual bool can_accumulate_input_gradient(std::size_t /*input*/) const { return false; }
  virtual void accumulate_input_gradient(std::size_t /*input*/) {}

  virtual std::span<Parameter> parameters() { return {}; }
  virtual std::span<Buffer> buffers() { return {}; }
  // Fills the parameters with their initial values, drawn from (seed, parameter name): the same on
  // every rank and for every world size.
  virtual void initialize(std::uint64_t /*seed*/) {}
  // Forward FLOPs per sample (multiply-adds count 2), for `dptrain inspect` and efficiency figures.
  virtual double flops_per_sample() const { return 0; }

 protected:
  // "<kind> '<name>'", the prefix of every error message a layer raises.
  std::string who() const { return std::string(kind()) + " '" + name_ + "'"; }
  void check_input_count(std::span<const Shape> inputs, std::size_t expected) const;
  // Fails with the layer's name and both shapes when a runtime tensor differs from the setup shape.
  void check_input(const Tensor& t, const Shape& expected, std::size_t index) const;

 private:
  std::string name_;
};

}  // namespace dptrain
