#pragma once
// What `dptrain bench --json` writes, as one field table (core/fields.hpp): the file's keys come from
// it in its order, `dptrain report` and `predict --bench` read the same names, and the round-trip test
// holds docs/performance.md's list of keys to it.
#include <cstdint>
#include <string>

#include "dptrain/core/fields.hpp"

namespace dptrain::app {

struct BenchResult {
  std::string model, backend, precision;
  std::int64_t batch_size = 0, image_size = 0, world_size = 0, global_batch = 0, steps = 0, warmup = 0;
  std::string allreduce;
  double communication_hidden_fraction = 0;
  double images_per_sec = 0, images_per_sec_stderr = 0, images_per_sec_min = 0, images_per_sec_max = 0;
  double gflops_achieved = 0, gflops_peak = 0, efficiency = 0;
  double gpu_memory_peak_mib = -1;  // the GPU allocator's peak; negative on the CPU
  std::int64_t peak_memory_bytes = 0, planned_memory_bytes = 0;
  bool memory_planned = true;
  // cuDNN's algorithm search in the first step (zeros on the CPU).
  double cudnn_search_seconds = 0;
  std::int64_t cudnn_searches = 0, cudnn_search_reused = 0, cudnn_nondeterministic_fallbacks = 0;
  bool deterministic = true;
  double forward_gflops_per_image = 0;
  std::int64_t parameters = 0, classes = 0, gradient_bytes = 0;
  double compute_seconds_per_step = 0;  // the slowest rank's, before it waits for gradients

  template <class Self, class Visit>
  static void fields(Self& r, Visit&& visit) {
    visit(Field{"model"}, r.model);
    visit(Field{"backend"}, r.backend);
    visit(Field{"precision"}, r.precision);
    visit(Field{"batch_size"}, r.batch_size);
    visit(Field{"image_size"}, r.image_size);
    visit(Field{"world_size"}, r.world_size);
    visit(Field{"global_batch"}, r.global_batch);
    visit(Field{"steps"}, r.steps);
    visit(Field{"warmup"}, r.warmup);
    visit(Field{"allreduce"}, r.allreduce);
    visit(Field{"communication_hidden_fraction"}, r.communication_hidden_fraction);
    visit(Field{"images_per_sec"}, r.images_per_sec);
    visit(Field{"images_per_sec_stderr"}, r.images_per_sec_stderr);
    visit(Field{"images_per_sec_min"}, r.images_per_sec_min);
    visit(Field{"images_per_sec_max"}, r.images_per_sec_max);
    visit(Field{"gflops_achieved"}, r.gflops_achieved);
    visit(Field{"gflops_peak"}, r.gflops_peak);
    visit(Field{"efficiency"}, r.efficiency);
    visit(Field{"gpu_memory_peak_mib"}, r.gpu_memory_peak_mib);
    visit(Field{"peak_memory_bytes"}, r.peak_memory_bytes);
    visit(Field{"planned_memory_bytes"}, r.planned_memory_bytes);
    visit(Field{"memory_planned"}, r.memory_planned);
    visit(Field{"cudnn_search_seconds"}, r.cudnn_search_seconds);
    visit(Field{"cudnn_searches"}, r.cudnn_searches);
    visit(Field{"cudnn_search_reused"}, r.cudnn_search_reused);
    visit(Field{"cudnn_nondeterministic_fallbacks"}, r.cudnn_nondeterministic_fallbacks);
    visit(Field{"deterministic"}, r.deterministic);
    visit(Field{"forward_gflops_per_image"}, r.forward_gflops_per_image);
    visit(Field{"parameters"}, r.parameters);
    visit(Field{"classes"}, r.classes);
    visit(Field{"gradient_bytes"}, r.gradient_bytes);
    visit(Field{"compute_seconds_per_step"}, r.compute_seconds_per_step);
  }
};

}  // namespace dptrain::app
