#pragma once
// RAII owners of the stream machinery the rest of a step needs beside the compute stream: a copy
// stream for the next batch's host-to-device transfer, a communication stream for gradient buckets,
// events that order one after the other without the host waiting, and pinned host buffers (only a
// copy from page-locked memory runs asynchronously with the host).
#include <cuda_runtime.h>

#include <cstddef>

#include "dptrain/core/host_memory.hpp"

namespace dptrain::cuda {

class Stream {
 public:
  Stream();  // non-blocking: never serialised with the legacy default stream
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  // Without timing: the cheapest kind, for ordering. `blocking`: a host waiting in synchronize()
  // sleeps until the device signals it, instead of spinning a core (for waits as long as a backward
  // pass, taken from a thread that shares the cores with the data loader).
  explicit Event(bool blocking = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

  // Marks the point `stream` has reached; `waiter` (another stream) will not run past it until then.
  void record(cudaStream_t stream);
  void make_wait(cudaStream_t waiter) const;
  void synchronize() const;  // the host waits: only where a value must be read

 private:
  cudaEvent_t event_ = nullptr;
};

class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Page-locked host memory of `device`'s process context, for buffers that threads other than the
// compute thread allocate and free (the loader's workers): each call sets the device first, since the
// runtime would otherwise make a context on device 0 for a thread that never chose one.
HostMemory page_locked_host_memory(int device);

// Whether `pointer` is in page-locked (pinned or registered) host memory, from which a copy to the
// device runs asynchronously with the host.
bool is_page_locked(const void* pointer);

}  // namespace dptrain::cuda
