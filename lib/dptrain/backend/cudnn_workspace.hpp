#pragma once
// The most workspace a cuDNN convolution algorithm may use (512 MiB; DPTRAIN_CUDNN_WORKSPACE_MB
// overrides it: a whole number of MiB; anything else throws dptrain::Error naming the variable). Here,
// not in backend/cuda, so that memory estimates know it in CPU-only builds too.
#include <cstddef>

namespace dptrain {

std::size_t cudnn_workspace_cap_bytes();

}  // namespace dptrain
