#include "dptrain/train/compute_options.hpp"

#include "dptrain/core/error.hpp"
#include "dptrain/distributed/compute_threads.hpp"
#if DPTRAIN_HAVE_CUDA
#include "dptrain/backend/cuda/cuda_backend.hpp"
#include "dptrain/backend/cuda/device_query.hpp"
#include "dptrain/distributed/nccl_communicators.hpp"
#endif

namespace dptrain {
namespace {
#if !DPTRAIN_HAVE_CUDA
[[noreturn]] void no_cuda() {
  throw Error(
      "this dptrain was built without the CUDA backend; rebuild with the 'cuda' preset (or the Spack "
      "variant +cuda) or use --backend cpu");
}
#endif
}  // namespace

int visible_devices(const BackendOptions& o) {
  if (o.backend == "cpu") return 0;
#if DPTRAIN_HAVE_CUDA
  std::string why;
  DPTRAIN_CHECK(cuda::gpu_usable(why), "--backend cuda: no usable GPU here (", why,
                "); run on a GPU node or use "
                "--backend cpu");
  return cuda::usable_device_count();
#else
  no_cuda();
#endif
}

std::unique_ptr<Backend> make_backend(const BackendOptions& o, const distributed::Job& job) {
  const Precision precision = parse_precision(o.precision);
  if (o.backend == "cpu") {
    DPTRAIN_CHECK(precision == Precision::fp32, "--precision ", o.precision,
                  " needs --backend cuda: the CPU "
                  "backend trains in fp32");
    return make_cpu_backend();
  }
#if DPTRAIN_HAVE_CUDA
  const int device = o.device >= 0 ? o.device : job.topology().self().device;
  DPTRAIN_CHECK(device >= 0 && device < cuda::usable_device_count(), "--device ", device, " is not one of the ",
                cuda::usable_device_count(), " GPUs this rank sees");
  return make_cuda_backend(device, precision, o.deterministic);
#else
  (void)job;
  no_cuda();
#endif
}

std::unique_ptr<distributed::Communicator> make_gradient_communicator([[maybe_unused]] Backend& backend,
                                                                      [[maybe_unused]] const distributed::Job& job) {
#if DPTRAIN_HAVE_CUDA
  if (!backend.device().is_cpu() && job.size() > 1) {
    return distributed::make_gpu_communicator(job.topology(), job.communicator_options(), backend.device().index);
  }
#endif
  return nullptr;
}

MemoryOptions memory_options(const BackendOptions& o, NetPurpose purpose) {
  MemoryOptions m;
  m.purpose = purpose;
  m.plan = o.memory_plan;
  return m;
}

LossScaleConfig loss_scale_config(const BackendOptions& o) {
  return parse_loss_scale(o.loss_scale, parse_precision(o.precision));
}

double peak_device_mib([[maybe_unused]] Backend& backend) {
#if DPTRAIN_HAVE_CUDA
  if (!backend.device().is_cpu()) return static_cast<double>(cuda::memory_stats(backend).peak_in_use) / (1 << 20);
#endif
  return -1;
}

int loader_threads(int requested, const distributed::Job& job, bool on_gpu) {
  if (requested > 0) return requested;
  const int compute = on_gpu                      ? 1
                      : job.compute_threads() > 0 ? job.compute_threads()
                                                  : distributed::compute_threads_in_use();
  return distributed::spare_threads(job.topology(), compute);
}

}  // namespace dptrain
