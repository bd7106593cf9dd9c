#pragma once
// The GPU agreement mode of the op cases (support/op_cases.hpp): a case's layer on the CPU backend
// (the reference) and on the CUDA backend in fp32, bf16 and fp16, from the same host inputs.
#include "support/op_cases.hpp"

namespace dptrain::gpu_testing {

// Runs the case's forward and backward on every backend and expects the output, the input gradients
// and the parameter gradients to agree within the case's tolerance of each precision.
void expect_op_case_agreement(const testing::OpCase& c);

}  // namespace dptrain::gpu_testing
