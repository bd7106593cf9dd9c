#include "dptrain/backend/cuda/streams.hpp"

#include "dptrain/backend/cuda/check_cuda.hpp"

namespace dptrain::cuda {

Stream::Stream() { DPTRAIN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
Stream::~Stream() {
  if (stream_) cudaStreamDestroy(stream_);
}

Event::Event(bool blocking) {
  const unsigned flags = cudaEventDisableTiming | (blocking ? cudaEventBlockingSync : 0u);
  DPTRAIN_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags));
}
Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}
void Event::record(cudaStream_t stream) { DPTRAIN_CUDA_CHECK(cudaEventRecord(event_, stream)); }
void Event::make_wait(cudaStream_t waiter) const { DPTRAIN_CUDA_CHECK(cudaStreamWaitEvent(waiter, event_, 0)); }
void Event::synchronize() const { DPTRAIN_CUDA_CHECK(cudaEventSynchronize(event_)); }

PinnedBuffer::PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
  DPTRAIN_CUDA_CHECK(cudaHostAlloc(&data_, bytes, cudaHostAllocPortable));
}
PinnedBuffer::~PinnedBuffer() {
  if (data_) cudaFreeHost(data_);
}

// The device is set, not saved and restored: a process drives one GPU (one rank per GPU), so every
// thread that touches CUDA uses this one, and restoring a loader thread's "previous" device (0, never
// chosen) would make a context on GPU 0, as cudaSetDevice initialises its device's context.
HostMemory page_locked_host_memory(int device) {
  HostMemory memory;
  memory.allocate = [device](std::size_t bytes) {
    DPTRAIN_CUDA_CHECK(cudaSetDevice(device));
    void* buffer = nullptr;
    // Portable: page-locked for every context of the process, whichever thread frees it.
    DPTRAIN_CUDA_CHECK(cudaHostAlloc(&buffer, bytes > 0 ? bytes : 1, cudaHostAllocPortable));
    return buffer;
  };
  memory.release = [device](void* buffer) {
    // Errors are dropped (and cleared): a release must not throw, and one that runs as the process
    // exits finds the runtime unloading; the memory goes with the process then.
    if (cudaSetDevice(device) != cudaSuccess || cudaFreeHost(buffer) != cudaSuccess) (void)cudaGetLastError();
  };
  memory.kind = "page-locked";
  return memory;
}

bool is_page_locked(const void* pointer) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    (void)cudaGetLastError();  // not a pointer the runtime knows: plain memory
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

}  // namespace dptrain::cuda
