#pragma once
// Where and in what arithmetic a run computes (train, bench, eval: --backend cpu|cuda, --device,
// --precision fp32|bf16|fp16, --loss-scale, --no-memory-plan), and what is made from it: the backend,
// the gradient communicator, the loader threads a rank can spare.
#include <memory>
#include <string>

#include "dptrain/backend/backend.hpp"
#include "dptrain/distributed/communicator.hpp"
#include "dptrain/distributed/job.hpp"
#include "dptrain/net/memory_plan.hpp"
#include "dptrain/train/loss_scaler.hpp"

namespace dptrain {

struct BackendOptions {
  std::string backend = "cpu";      // cpu | cuda
  int device = -1;                  // GPU ordinal; -1: chosen from the rank's place on its node
  std::string precision = "fp32";   // fp32 | bf16 | fp16
  std::string loss_scale = "auto";  // auto | none | dynamic | a number
  bool memory_plan = true;          // off: --no-memory-plan (one buffer per activation, for comparisons)
  bool deterministic = true;        // off: --nondeterministic (cuDNN may pick atomics-based algorithms)
  bool memory_check = true;         // off: --skip-memory-check (start even when the estimate exceeds the memory)
};

// How many GPUs the job's topology may bind ranks to: 0 for --backend cpu; for cuda the usable
// devices, or a one-sentence error (with the reason) when there are none.
int visible_devices(const BackendOptions& options);

// The backend of this rank: the CPU, or its GPU (--device, else the one the topology chose).
std::unique_ptr<Backend> make_backend(const BackendOptions& options, const distributed::Job& job);

// The communicator the gradients go through: NCCL (flat, or NCCL in the node and MPI between nodes)
// for a GPU backend on several ranks; nullptr where the job's host communicator serves (CPU, one rank).
std::unique_ptr<distributed::Communicator> make_gradient_communicator(Backend& backend, const distributed::Job& job);

LossScaleConfig loss_scale_config(const BackendOptions& options);

// The loader threads of this rank: `requested` when given, else the CPUs of its share of its CPU set
// not taken by compute threads (OpenMP's on the CPU backend, one host thread on a GPU), at least 1.
int loader_threads(int requested, const distributed::Job& job, bool on_gpu);

// How a net of this purpose allocates its activations (--no-memory-plan: one buffer per tensor).
MemoryOptions memory_options(const BackendOptions& options, NetPurpose purpose);

// The device memory the backend's allocator has handed out at most (MiB); a negative number on the CPU.
double peak_device_mib(Backend& backend);

}  // namespace dptrain
