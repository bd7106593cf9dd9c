#pragma once
// What a data-parallel run should reach on N GPUs, from what is known or measured on one: the
// compute time of a step, the gradient buckets and when the backward pass finishes each, the links
// inside a node and between nodes, and the loader's capacity. `dptrain predict` prints it.
//
// The model, per step on every GPU:
//   compute      forward + backward at the GPU's batch (1/3 forward, 2/3 backward: a backward pass
//                does twice the forward's work, the gradients of the data and of the weights);
//   allreduce    each bucket starts when the backward pass has finished it (its ready fraction of
//                the backward pass) and the previous bucket is done; a ring allreduce of B bytes over
//                n ranks takes 2(n-1)/n * B / busbw + 2(n-1) * latency (NCCL's bus bandwidth, as
//                nccl-tests report it); hierarchical: reduce-scatter in the node, the ring between
//                nodes on 1/k of the bytes, allgather in the node;
//   exposed      what the last bucket still needs after the backward pass ends (the last bucket is
//                ready only then, so at least its whole allreduce);
//   data         the batch divided by the loader's rate (images/s a thread times threads per GPU):
//                loading overlaps compute, so it bounds the step when it is longer.
//   step         max(compute + exposed, data); images/s = GPUs * batch / step.
#include <string>
#include <vector>

namespace dptrain::distributed {

struct LinkModel {
  double latency_seconds = 0;       // per ring step
  double bus_bytes_per_second = 0;  // NCCL's bus bandwidth of an allreduce over this link
};

struct ClusterModel {
  LinkModel intra;  // between GPUs of one node (PCIe, NVLink)
  LinkModel inter;  // between nodes (InfiniBand, Ethernet)
  int gpus_per_node = 1;
  double loader_images_per_thread = 0;  // 0: the loader never bounds
  int loader_threads_per_gpu = 1;
};

struct BucketTiming {
  double bytes = 0;
  double ready_fraction = 1;  // of the backward pass, when this bucket's last gradient is written
};

enum class AllreduceShape { flat, hierarchical };

// Seconds of a ring allreduce of `bytes` over `ranks` on `link`.
double ring_allreduce_seconds(double bytes, int ranks, const LinkModel& link);
// The link that explains two timings of a ring allreduce over `ranks` (a small message and a large
// one), by the formula above: the latency from the small, the bus bandwidth from the difference.
// When noise made the small one the slower, latency 0 and the large one's time all bandwidth.
LinkModel fit_ring_link(int ranks, double small_bytes, double small_seconds, double large_bytes, double large_seconds);
// Seconds of a reduce-scatter (or an allgather) of `bytes` over `ranks`: half the ring allreduce.
double ring_reduce_scatter_seconds(double bytes, int ranks, const LinkModel& link);
// One bucket's allreduce over `gpus` GPUs on `nodes` nodes of the cluster. Flat over several nodes:
// one ring through every GPU, as slow as its slowest hop (the network).
double allreduce_seconds(double bytes, int gpus, const ClusterModel& cluster, AllreduceShape shape);

struct StepPrediction {
  int gpus = 1, nodes = 1;
  double batch_per_gpu = 0;
  double compute_seconds = 0;
  double allreduce_seconds = 0;  // every bucket's, end to end
  double exposed_seconds = 0;    // of the allreduce, after the backward pass
  double data_seconds = 0;       // the loader's time for one batch
  double step_seconds = 0;
  double images_per_second = 0;
  // "data" when the loader's time is the step; else "communication" when the exposed allreduce is
  // over 10% of the compute, else "compute".
  std::string bound;
};

// One row: `compute_seconds` at `batch_per_gpu` on each of `gpus` GPUs. `overlap` false: every
// bucket is reduced after the backward pass.
StepPrediction predict_step(int gpus, double batch_per_gpu, double compute_seconds,
                            const std::vector<BucketTiming>& buckets, const ClusterModel& cluster, AllreduceShape shape,
                            bool overlap = true);

}  // namespace dptrain::distributed
