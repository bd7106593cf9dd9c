#pragma once
#include <memory>

#include "dptrain/backend/backend.hpp"
#include "dptrain/backend/cuda/context.hpp"

namespace dptrain::cuda {

// The next batch's images: host -> page-locked buffer (a CPU copy while the GPU computes the current
// step, only for a batch in pageable memory; the loader fills page-locked ones) -> device staging buffer on a copy
// stream -> the net's input on the compute stream (converted to the activation type; u8 batches normalised there),
// ordered by events so that neither stream waits for the host.
std::unique_ptr<InputStager> make_input_stager(const CudaContextPtr& ctx, const Shape& shape,
                                               const InputFormat& format);

}  // namespace dptrain::cuda
