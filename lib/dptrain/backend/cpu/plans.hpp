#pragma once
// Factories for the CPU plans, one source file each; OneDnnBackend hands them out.
#include "dptrain/backend/backend.hpp"
#include "dptrain/backend/cpu/dnnl_context.hpp"

namespace dptrain::cpu {

// make_<op>(context, parameters...) for every op of DPTRAIN_BACKEND_OPS (backend.hpp).
#define DPTRAIN_DECLARE_CPU_FACTORY(name, Plan, params, args) \
  std::unique_ptr<Plan> make_##name(DnnlContextPtr ctx, DPTRAIN_OP_PARAMETERS params);
DPTRAIN_BACKEND_OPS(DPTRAIN_DECLARE_CPU_FACTORY)
#undef DPTRAIN_DECLARE_CPU_FACTORY

}  // namespace dptrain::cpu
