#include "dptrain/distributed/scaling_model.hpp"

#include <algorithm>

#include "dptrain/core/error.hpp"

namespace dptrain::distributed {

double ring_allreduce_seconds(double bytes, int ranks, const LinkModel& link) {
  if (ranks <= 1 || bytes <= 0) return 0;
  DPTRAIN_CHECK(link.bus_bytes_per_second > 0, "a link's bus bandwidth must be positive");
  const double n = ranks;
  return 2 * (n - 1) / n * bytes / link.bus_bytes_per_second + 2 * (n - 1) * link.latency_seconds;
}

LinkModel fit_ring_link(int ranks, double small_bytes, double small_seconds, double large_bytes, double large_seconds) {
  DPTRAIN_CHECK(ranks >= 2 && large_bytes > small_bytes, "fitting a link needs 2 ranks or more and a larger message");
  const double n = ranks, steps = 2 * (n - 1), share = 2 * (n - 1) / n;
  if (large_seconds <= small_seconds) {
    // Noise (a loaded machine) made the small message the slower: the latency cannot be told apart,
    // so all of the large message's time is taken as bandwidth (a safe, pessimistic figure).
    DPTRAIN_CHECK(large_seconds > 0, "an allreduce took no time: nothing to measure");
    return {0, share * large_bytes / large_seconds};
  }
  // Two equations, two unknowns: t = share * B / busbw + steps * latency.
  const double per_byte = std::max((large_seconds - small_seconds) / (share * (large_bytes - small_bytes)), 1e-15);
  const double latency = std::max(0.0, (small_seconds - share * small_bytes * per_byte) / steps);
  return {latency, 1 / per_byte};
}

double ring_reduce_scatter_seconds(double bytes, int ranks, const LinkModel& link) {
  return ring_allreduce_seconds(bytes, ranks, link) / 2;
}

double allreduce_seconds(double bytes, int gpus, const ClusterModel& cluster, AllreduceShape shape) {
  const int per_node = std::min(gpus, std::max(1, cluster.gpus_per_node));
  const int nodes = (gpus + per_node - 1) / per_node;
  if (nodes == 1) return ring_allreduce_seconds(bytes, gpus, cluster.intra);
  if (shape == AllreduceShape::hierarchical && per_node > 1) {
    return 2 * ring_reduce_scatter_seconds(bytes, per_node, cluster.intra) +
           ring_allreduce_seconds(bytes / per_node, nodes, cluster.inter);
  }
  // One ring through all GPUs: every step waits for its slowest hop.
  const LinkModel slowest{std::max(cluster.intra.latency_seconds, cluster.inter.latency_seconds),
                          std::min(cluster.intra.bus_bytes_per_second, cluster.inter.bus_bytes_per_second)};
  return ring_allreduce_seconds(bytes, gpus, slowest);
}

StepPrediction predict_step(int gpus, double batch_per_gpu, double compute_seconds,
                            const std::vector<BucketTiming>& buckets, const ClusterModel& cluster, AllreduceShape shape,
                            bool overlap) {
  DPTRAIN_CHECK(gpus >= 1 && batch_per_gpu > 0 && compute_seconds > 0,
                "a prediction needs at least one GPU, a batch and a compute time");
  StepPrediction p;
  p.gpus = gpus;
  const int per_node = std::min(gpus, std::max(1, cluster.gpus_per_node));
  p.nodes = (gpus + per_node - 1) / per_node;
  p.batch_per_gpu = batch_per_gpu;
  p.compute_seconds = compute_seconds;
  const double forward = compute_seconds / 3, backward = compute_seconds - forward;
  double free_at = overlap ? 0 : compute_seconds;  // when the communication is next idle
  for (const BucketTiming& b : buckets) {
    const double seconds = allreduce_seconds(b.bytes, gpus, cluster, shape);
    const double ready = overlap ? forward + backward * std::clamp(b.ready_fraction, 0.0, 1.0) : compute_seconds;
    free_at = std::max(free_at, ready) + seconds;
    p.allreduce_seconds += seconds;
  }
  p.exposed_seconds = std::max(0.0, free_at - compute_seconds);
  if (cluster.loader_images_per_thread > 0) {
    p.data_seconds = batch_per_gpu / (cluster.loader_images_per_thread * std::max(1, cluster.loader_threads_per_gpu));
  }
  const double trained = compute_seconds + p.exposed_seconds;
  p.step_seconds = std::max(trained, p.data_seconds);
  p.images_per_second = gpus * batch_per_gpu / p.step_seconds;
  if (p.data_seconds > trained) {
    p.bound = "data";
  } else {
    p.bound = p.exposed_seconds > 0.1 * compute_seconds ? "communication" : "compute";
  }
  return p;
}

}  // namespace dptrain::distributed
