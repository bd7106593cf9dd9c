#pragma once
// Factories for the CUDA plans, one source file each; CudaBackend hands them out.
#include "dptrain/backend/backend.hpp"
#include "dptrain/backend/cuda/context.hpp"

namespace dptrain::cuda {

// make_<op>(context, parameters...) for every op of DPTRAIN_BACKEND_OPS (backend.hpp).
#define DPTRAIN_DECLARE_CUDA_FACTORY(name, Plan, params, args) \
  std::unique_ptr<Plan> make_##name(CudaContextPtr ctx, DPTRAIN_OP_PARAMETERS params);
DPTRAIN_BACKEND_OPS(DPTRAIN_DECLARE_CUDA_FACTORY)
#undef DPTRAIN_DECLARE_CUDA_FACTORY

}  // namespace dptrain::cuda
