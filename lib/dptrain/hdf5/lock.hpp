#pragma once
// One process-wide lock around every HDF5 call made while another thread may be using HDF5.
// Debian's (and Spack's default) HDF5 is built without --enable-threadsafe: the library keeps global
// state (the error stack, the open-id tables, the metadata caches) that two threads calling it at once
// corrupt, even on different files. The loader's prefetch threads take this lock around shard opens,
// reads and closes (decoding and augmentation run outside it, so the threads still overlap); any code
// that calls HDF5 while a Loader is alive (the checkpoint writer) must take it too.
#include <mutex>

namespace dptrain::h5 {

// Recursive, so a helper that takes the lock may call another that takes it.
inline std::recursive_mutex& global_mutex() {
  static std::recursive_mutex mutex;  // an inline function's static: one instance in the whole program
  return mutex;
}

using Lock = std::lock_guard<std::recursive_mutex>;

}  // namespace dptrain::h5
