#pragma once
// The most workspace a cuDNN convolution algorithm may use. A fixed cap shuts the algorithms that
// convert layouts or split the reduction (the fast ones for large early layers in 16 bits) out on a
// large GPU, and a large one would crowd a small GPU, so the cap follows the memory the device has
// free when the first search runs (after the activations are allocated): a quarter of it
// (kWorkspaceShare), at least min(512 MiB, half of it), at most 4 GiB, rounded down to a power of two
// (so that ranks on like GPUs, whose free memory differs by a little, get the same cap and can run
// each other's algorithm choices). DPTRAIN_CUDNN_WORKSPACE_MB
// overrides it: a whole number of MiB; anything else throws dptrain::Error naming the variable.
// Here, not in backend/cuda, so that memory estimates know it in CPU-only builds too.
#include <cstddef>

namespace dptrain {

// The share of the free device memory the workspace cap takes, and its bounds.
constexpr std::size_t kWorkspaceShareDivisor = 4;
constexpr std::size_t kWorkspaceFloorBytes = std::size_t{512} << 20;
constexpr std::size_t kWorkspaceCeilingBytes = std::size_t{4} << 30;

// The cap on a device with `free_bytes` free (the override where one is set).
std::size_t cudnn_workspace_cap_bytes(std::size_t free_bytes);
// The cap where the device's free memory is not known (an estimate without a device): the override,
// or kWorkspaceFloorBytes.
std::size_t cudnn_workspace_cap_bytes();

}  // namespace dptrain
