// The host side of our kernels' launch shapes (needs the CUDA headers, not a GPU): the bias
// gradient's channel sums are cut into groups of samples so that few channels still fill the GPU.
#include <catch2/catch.hpp>

#include "dptrain/backend/cuda/kernels.hpp"

using dptrain::cuda::kernels::channel_sum_splits;

TEST_CASE("channel sums: about 1024 blocks, never more groups than samples, one group when it cannot help") {
  CHECK(channel_sum_splits(256, 64) == 16);   // GoogLeNet's conv1: 64 x 16 = 1024 blocks
  CHECK(channel_sum_splits(256, 1000) == 2);  // a 1000-way classifier: 2000 blocks
  CHECK(channel_sum_splits(256, 2048) == 1);  // channels enough on their own
  CHECK(channel_sum_splits(5, 300) == 4);     // 4 groups of 2, 2, 1 and no samples
  CHECK(channel_sum_splits(3, 8) == 3);       // capped by the samples
  CHECK(channel_sum_splits(1, 8) == 1);
  CHECK(channel_sum_splits(0, 8) == 1);
  CHECK(channel_sum_splits(256, 0) == 1);
  CHECK(channel_sum_splits(1'000'000, 1) == 1024);  // gridDim.y's 65535 is never near
}
