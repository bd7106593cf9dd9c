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

}  // namespace dptrain::cuda
