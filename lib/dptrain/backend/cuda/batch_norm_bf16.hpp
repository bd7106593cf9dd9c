#pragma once
// bf16 batch norm. Whether cuDNN's legacy batch-norm routines take BFLOAT16 data is nowhere
// documented in a way we can rely on across cuDNN 8 and 9. Where they do, a bf16 plan runs them
// natively; where not, on f32 copies of its input and gradient (two more passes over activation-sized
// memory). A probe decides, once per device and process: it runs both paths on small tensors and keeps
// the native one only when cuDNN accepts it and its results agree with the f32 path's.
#include <string>

#include "dptrain/backend/cuda/context.hpp"

namespace dptrain::cuda {

// DPTRAIN_BF16_BATCH_NORM: "auto" (or unset: probe), "native" (required: an error when the probe
// fails) or "f32" (always the copies, no probe). Anything else is an error naming the variable.
enum class Bf16BatchNormPolicy { automatic, native, f32_copies };
Bf16BatchNormPolicy bf16_batch_norm_policy();

struct Bf16BatchNormProbe {
  bool native = false;
  // Why not (cuDNN's status, or the result that disagreed), or the largest differences found.
  std::string detail;
};

// Runs the probe on ctx's device, on its stream (synchronously). Not cached.
Bf16BatchNormProbe probe_bf16_batch_norm(CudaContext& ctx);

// Whether bf16 batch-norm plans on ctx's device run natively: by the policy and, for "auto", the
// probe's result, cached per device. A device's first fallback is reported on stderr.
bool bf16_batch_norm_native(CudaContext& ctx);

}  // namespace dptrain::cuda
