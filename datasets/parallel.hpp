#pragma once
// parallel_for: the conversion's only threading. Work items are handed out one at a time from an
// atomic counter (items differ a lot in cost: a shard of large JPEGs against a reused one), and the
// first exception stops the remaining items and is rethrown on the calling thread.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace dptrain::datasets {

// Calls body(i) for i in [0, count) on up to `jobs` threads (the caller's thread is one of them).
template <typename Body>
void parallel_for(std::int64_t count, int jobs, Body&& body) {
  std::atomic<std::int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto work = [&] {
    for (std::int64_t i = next++; i < count && !failed; i = next++) {
      try {
        body(i);
      } catch (...) {
        const std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };
  const auto threads = static_cast<std::int64_t>(std::max(1, jobs));
  std::vector<std::jthread> helpers;
  for (std::int64_t t = 1; t < std::min(threads, count); ++t) helpers.emplace_back(work);
  work();
  helpers.clear();  // joins
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace dptrain::datasets
