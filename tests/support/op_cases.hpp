#pragma once
// The op test harness: one description (OpCase) per tested configuration of an op, and drivers that
// take the same descriptions to every mode: the reference check (forward, input, parameter and state
// results against a naive double-precision reference), the finite-difference check of the backward
// pass, a timing mode (here), and the CPU/GPU agreement in fp32, bf16 and fp16
// (tests/gpu/op_case_agreement.hpp). Modelled on ggml's test-backend-ops: a new op's tests are its
// list of cases, <op>_cases(), and nothing else.
//
// The list functions are declared from DPTRAIN_BACKEND_OPS and called from it (all_op_cases, the
// TEST_CASEs of tests/unit/layers/op_cases_test.cpp and tests/gpu/backend_agreement_test.cpp), so an
// op added to that list without a definition of <op>_cases() fails to link.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dptrain/backend/backend.hpp"
#include "dptrain/layers/layer.hpp"

namespace dptrain::testing {

// The bound on a result's error in each precision: fp32 is the CPU's (and the GPU's fp32 run); bf16
// and fp16 are the GPU's 16-bit activations against the CPU's fp32.
struct Tolerance {
  double fp32 = 1e-4;
  double bf16 = 1e-2;
  double fp16 = 1e-2;
};

// A result the layer keeps rather than returns (running averages, probabilities), read after the run.
struct ExpectedState {
  std::string name;
  std::function<const Tensor&(Layer&)> actual;
  std::vector<double> expected;
};

// What the reference says the results are: the output, a gradient for every input that gets one
// (an input without one may have an empty vector), one for every parameter, and any kept state.
struct ExpectedResults {
  std::vector<double> output;
  std::vector<std::vector<double>> input_gradients;      // per input
  std::vector<std::vector<double>> parameter_gradients;  // per layer.parameters(), in order
  std::vector<ExpectedState> state;
};

struct OpInputs {
  std::vector<Tensor> inputs;
  Tensor doutput;
};

struct OpCase {
  std::string op;    // its op of DPTRAIN_BACKEND_OPS ("add" is a layer on Backend::add)
  std::string name;  // what the case shows
  std::vector<Shape> inputs;
  Shape output;                  // worked out by hand, not by the library's shape functions
  std::vector<bool> needs_grad;  // per input; empty: every input
  PassContext context;
  std::function<std::unique_ptr<Layer>()> make_layer;
  // After setup: parameter values and state (written through the backend, so that the GPU agreement
  // runs it on every backend), and checks of what setup made. May be empty.
  std::function<void(Layer&, Backend&)> prepare;
  // Host tensors: f32 values are activations, i32 ones labels (which stay on the host on every backend).
  std::function<OpInputs()> make_inputs;
  // Empty: no reference check. Called before the layer runs, so it sees the prepared state (the
  // running averages a training forward then moves).
  std::function<ExpectedResults(Layer&, const OpInputs&)> reference;
  // Runs backward a second time into stale gradient tensors and expects the same: backward writes its
  // input gradients, never adds to them.
  bool check_overwrite = true;
  // The finite-difference step of the gradient check; none: no gradient check.
  std::optional<double> gradient_step;
  Tolerance tolerance;
  // The output is a loss: one plain f32 value on every backend, not an activation.
  bool loss = false;
};

// Which inputs of a case get a gradient, as the span of bools Layer runs take (std::vector<bool>
// has no contiguous storage).
class GradientMask {
 public:
  explicit GradientMask(const OpCase& c);
  std::span<const bool> span() const { return {flags_.get(), size_}; }

 private:
  std::unique_ptr<bool[]> flags_;
  std::size_t size_;
};

// Inputs uniform in [low, high) from seeds seed + 1 + i, the output gradient from seed + 1 + inputs.
OpInputs random_op_inputs(std::span<const Shape> inputs, const Shape& output, std::uint64_t seed, float low = -1.f,
                          float high = 1.f);
// Every parameter uniform in [-1, 1) from seeds seed, seed + 1, ...; every gradient a stale 1000, so
// a backward that adds to (instead of writing) a gradient is caught by the reference.
void randomize_parameters(Layer& layer, Backend& backend, std::uint64_t seed);
// Each parameter's value, widened, for a reference.
std::vector<std::vector<double>> parameter_values(Layer& layer);

#define DPTRAIN_DECLARE_OP_CASES(name, Plan, params, args) std::vector<OpCase> name##_cases();
DPTRAIN_BACKEND_OPS(DPTRAIN_DECLARE_OP_CASES)
#undef DPTRAIN_DECLARE_OP_CASES
std::vector<OpCase> add_cases();
// Every case of every op, for the timing mode.
std::vector<OpCase> all_op_cases();

// The drivers (Catch2 assertions). check_op_case runs the reference check, then the gradient check,
// each where the case asks for it, on `backend` (a host backend: results are read directly).
void check_op_case(const OpCase& c, Backend& backend);
// Prints the mean milliseconds of `repeats` forward and backward passes (after one warm-up pass) on
// `backend`, a host backend (the tensors are host tensors); asserts nothing about time.
void time_op_case(const OpCase& c, Backend& backend, int repeats);

}  // namespace dptrain::testing
