#include "dptrain/distributed/bucket_plan.hpp"

namespace dptrain::distributed {

std::vector<std::size_t> assign_buckets(const std::vector<std::size_t>& elements, std::size_t bucket_bytes) {
  std::vector<std::size_t> bucket_of;
  bucket_of.reserve(elements.size());
  std::size_t bucket = 0, filled = 0;  // elements in the current bucket
  for (const std::size_t n : elements) {
    // A new bucket when this one would overflow, unless it is still empty.
    if (filled > 0 && (filled + n) * sizeof(float) > bucket_bytes) {
      ++bucket;
      filled = 0;
    }
    bucket_of.push_back(bucket);
    filled += n;
  }
  return bucket_of;
}

}  // namespace dptrain::distributed
