#pragma once
// The CUDA backend: cuDNN for convolution, LRN and fp32 batch normalization, cuBLAS for linear layers,
// and our own kernels for the rest (batch normalization of bf16 and fp16 activations included:
// batch_norm_policy.hpp). Only built with the CUDA toolkit (DPTRAIN_HAVE_CUDA).
#include <cstdint>
#include <memory>

#include "dptrain/backend/backend.hpp"
#include "dptrain/backend/cuda/algorithm_cache.hpp"
#include "dptrain/backend/cuda/caching_allocator.hpp"

namespace dptrain {

// A backend on GPU `device` (an ordinal among the visible devices); it makes that device current.
// `precision` bf16 or fp16 keeps activations in that type (fp32 master weights; see backend.hpp).
// `deterministic`: cuDNN's algorithm searches take only algorithms that give the same bits at every
// run (the default; false is --nondeterministic, the fastest of all).
std::unique_ptr<Backend> make_cuda_backend(int device, Precision precision = Precision::fp32,
                                           bool deterministic = true);

namespace cuda {
// The caching allocator's counters of a CUDA backend (GPU memory use per step); throws for another.
MemoryStats memory_stats(Backend& backend);
// How many times a CUDA backend built the device table of its one-launch SGD step (tests: the table is
// kept while the parameter list is the same); throws for another backend.
std::int64_t sgd_table_builds(Backend& backend);
}  // namespace cuda

}  // namespace dptrain
