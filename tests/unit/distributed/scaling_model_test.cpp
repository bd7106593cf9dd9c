// The scaling model's arithmetic against hand-computed cases: the ring allreduce, the hierarchical
// one, a flat ring across nodes, overlap limited by the last bucket, the loader as the bound, and the
// bucket rule the GradientReducer shares.
#include "dptrain/distributed/scaling_model.hpp"

#include <catch2/catch.hpp>

#include "dptrain/distributed/bucket_plan.hpp"

using namespace dptrain::distributed;
using Catch::Detail::Approx;

TEST_CASE("a ring allreduce takes 2(n-1)/n * bytes / busbw + 2(n-1) * latency", "[distributed][predict]") {
  const LinkModel link{5e-6, 10e9};
  CHECK(ring_allreduce_seconds(100e6, 4, link) == Approx(2.0 * 3 / 4 * 100e6 / 10e9 + 6 * 5e-6));
  CHECK(ring_allreduce_seconds(100e6, 4, link) == Approx(0.01503));
  CHECK(ring_allreduce_seconds(100e6, 1, link) == 0);
  CHECK(ring_reduce_scatter_seconds(100e6, 4, link) == Approx(0.01503 / 2));
}

TEST_CASE("a link fitted to two timings gives them back", "[distributed][predict]") {
  const LinkModel truth{7e-6, 3e9};
  for (const int ranks : {2, 4, 16}) {
    const LinkModel fitted = fit_ring_link(ranks, 1024, ring_allreduce_seconds(1024, ranks, truth), 64e6,
                                           ring_allreduce_seconds(64e6, ranks, truth));
    CHECK(fitted.latency_seconds == Approx(truth.latency_seconds));
    CHECK(fitted.bus_bytes_per_second == Approx(truth.bus_bytes_per_second));
  }
  // A large message no slower than the small one (noise): all its time is bandwidth.
  const LinkModel noisy = fit_ring_link(2, 1024, 8e-3, 64e6, 1e-3);  // the small one was slower
  CHECK(noisy.latency_seconds == 0);
  CHECK(noisy.bus_bytes_per_second == Approx(64e6 / 1e-3));
  // Latency never negative when the small message was quicker than the bandwidth alone predicts.
  CHECK(fit_ring_link(2, 1024, 1e-9, 64e6, 1e-2).latency_seconds >= 0);
}

TEST_CASE("hierarchical: reduce-scatter in the node, a ring of shards between nodes, allgather",
          "[distributed][predict]") {
  ClusterModel c;
  c.gpus_per_node = 4;
  c.intra = {10e-6, 6e9};
  c.inter = {5e-6, 10e9};
  // In the node: 2 x (3/4 * 40 MB / 6 GB/s + 3 x 10 us); between 2 nodes: 10 MB, 1/1 * 10 MB / 10 GB/s + 2 x 5 us.
  const double in_node = 2 * (0.75 * 40e6 / 6e9 + 3 * 10e-6), between = 10e6 / 10e9 + 2 * 5e-6;
  CHECK(allreduce_seconds(40e6, 8, c, AllreduceShape::hierarchical) == Approx(in_node + between));
  CHECK(allreduce_seconds(40e6, 8, c, AllreduceShape::hierarchical) == Approx(0.01107));
  // Flat over 2 nodes: one ring of 8 at the slower bandwidth and the longer latency.
  CHECK(allreduce_seconds(40e6, 8, c, AllreduceShape::flat) == Approx(2.0 * 7 / 8 * 40e6 / 6e9 + 14 * 10e-6));
  // One node: a ring of its GPUs, whatever the shape.
  CHECK(allreduce_seconds(40e6, 4, c, AllreduceShape::hierarchical) ==
        Approx(ring_allreduce_seconds(40e6, 4, c.intra)));
}

TEST_CASE("overlap hides every bucket but what the last one needs after the backward pass", "[distributed][predict]") {
  ClusterModel c;
  c.gpus_per_node = 2;
  c.intra = {0, 1e9};  // 2 GPUs: an allreduce of B bytes takes B / 1 GB/s
  c.inter = {0, 1e9};
  // 0.3 s of compute: 0.1 forward, 0.2 backward. Bucket 1 ready halfway through the backward pass
  // (0.2 s), bucket 2 at its end (0.3 s).
  const std::vector<BucketTiming> fast{{50e6, 0.5}, {20e6, 1.0}};
  StepPrediction p = predict_step(2, 64, 0.3, fast, c, AllreduceShape::flat);
  CHECK(p.allreduce_seconds == Approx(0.07));
  CHECK(p.exposed_seconds == Approx(0.02));  // bucket 1 done at 0.25; bucket 2 from 0.3 to 0.32
  CHECK(p.step_seconds == Approx(0.32));
  CHECK(p.images_per_second == Approx(2 * 64 / 0.32));
  CHECK(p.bound == "compute");
  // A first bucket that takes 0.15 s delays the last: 0.2 + 0.15 = 0.35, then 0.02 more.
  const std::vector<BucketTiming> slow{{150e6, 0.5}, {20e6, 1.0}};
  p = predict_step(2, 64, 0.3, slow, c, AllreduceShape::flat);
  CHECK(p.exposed_seconds == Approx(0.07));
  CHECK(p.bound == "communication");
  // Without overlap every bucket waits for the end of the backward pass.
  p = predict_step(2, 64, 0.3, fast, c, AllreduceShape::flat, false);
  CHECK(p.exposed_seconds == Approx(0.07));
  // One GPU: nothing to reduce.
  p = predict_step(1, 64, 0.3, fast, c, AllreduceShape::flat);
  CHECK(p.exposed_seconds == 0);
  CHECK(p.images_per_second == Approx(64 / 0.3));
}

TEST_CASE("the loader bounds the step when a batch takes it longer than the compute", "[distributed][predict]") {
  ClusterModel c;
  c.intra = c.inter = {0, 1e9};
  c.loader_images_per_thread = 100;
  c.loader_threads_per_gpu = 2;
  const StepPrediction p = predict_step(1, 64, 0.3, {}, c, AllreduceShape::flat);
  CHECK(p.data_seconds == Approx(0.32));
  CHECK(p.step_seconds == Approx(0.32));
  CHECK(p.bound == "data");
}

TEST_CASE("buckets fill in reduction order up to their size; a large gradient gets its own", "[distributed][predict]") {
  CHECK(assign_buckets({10, 10, 10}, 80) == std::vector<std::size_t>{0, 0, 1});
  CHECK(assign_buckets({100, 1, 1}, 80) == std::vector<std::size_t>{0, 1, 1});
  CHECK(assign_buckets({1, 100, 1}, 80) == std::vector<std::size_t>{0, 1, 2});
  CHECK(assign_buckets({}, 80).empty());
}
