// Memory estimates: the parts add up, activations grow with the batch, and the largest batch that fits
// a limit is the largest whose estimate fits.
#include "dptrain/net/memory_estimate.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>

#include "dptrain/backend/cudnn_workspace.hpp"
#include "dptrain/net/models/registry.hpp"

using namespace dptrain;

namespace {
std::unique_ptr<Net> dry(Backend& backend, const std::string& model, std::int64_t batch, NetPurpose purpose) {
  ModelConfig c;
  c.batch = static_cast<int>(batch);
  c.memory = MemoryOptions{purpose, true, false};
  return build_model(model, backend, c);
}
}  // namespace

TEST_CASE("a dry net has a plan but no memory and refuses to run", "[net][memory]") {
  auto backend = make_cpu_backend();
  auto net = dry(*backend, "googlenet", 512, NetPurpose::training);
  CHECK(net->memory_plan().arena_bytes() > std::size_t{10} << 30);  // 512 images would need over 10 GiB
  CHECK(net->activation_bytes() == 0);
  CHECK_FALSE(net->images().defined());
  CHECK_THROWS_WITH(net->forward(PassContext{}), Catch::Contains("memory estimate"));
}

TEST_CASE("the estimate's parts follow the model, the purpose and the precision", "[net][memory]") {
  auto backend = make_cpu_backend();
  auto net = dry(*backend, "resnet50", 8, NetPurpose::training);
  MemoryEstimateOptions o;
  const MemoryEstimate cpu = estimate_memory(*net, o);
  CHECK(cpu.batch == 8);
  CHECK(cpu.parameters == 25557032u * 4);
  CHECK(cpu.gradients == cpu.parameters);
  CHECK(cpu.optimizer == cpu.parameters);
  CHECK(cpu.reserved == 0);
  CHECK(cpu.activations == net->memory_plan().arena_bytes());
  CHECK(cpu.inputs == 8u * 3 * 224 * 224 * 4 + 8 * 4);
  CHECK(cpu.total() == cpu.fixed() + cpu.activations + cpu.layer_state + cpu.inputs);
  CHECK(cpu.total_unplanned() > 3 * cpu.total() / 2);

  o.ranks = 4;  // the reducer's buckets are the gradients (views): several ranks need no more memory
  CHECK(estimate_memory(*net, o).total() == cpu.total());
  o.ranks = 1;
  o.cuda = true;
  const MemoryEstimate gpu = estimate_memory(*net, o);
  CHECK(gpu.reserved == kCudaReservedBytes);
  CHECK(gpu.activations == cpu.activations);  // the same plan on every backend
  o.precision = Precision::bf16;
  const MemoryEstimate half = estimate_memory(*net, o);
  CHECK(half.activations * 2 <= cpu.activations + 256 * net->memory_plan().tensors().size());
  CHECK(half.parameters == cpu.parameters);  // fp32 master weights
  CHECK(half.workspace > gpu.workspace);     // low-precision copies of the weights

  auto eval = dry(*backend, "resnet50", 8, NetPurpose::inference);
  const MemoryEstimate inference = estimate_memory(*eval, MemoryEstimateOptions{NetPurpose::inference});
  CHECK(inference.gradients == 0);
  CHECK(inference.optimizer == 0);
  CHECK(inference.activations * 5 < cpu.activations);
}

TEST_CASE("the largest batch fits the limit and one more does not", "[net][memory]") {
  auto backend = make_cpu_backend();
  for (const NetPurpose purpose : {NetPurpose::training, NetPurpose::inference}) {
    auto build = [&](std::int64_t batch) { return dry(*backend, "googlenet", batch, purpose); };
    MemoryEstimateOptions o;
    o.purpose = purpose;
    o.cuda = true;
    const std::size_t limit = std::size_t{16} << 30;
    const std::int64_t best = largest_batch(build, o, limit);
    INFO(best);
    CHECK(best > 64);
    CHECK(estimate_memory(*build(best), o).total() <= limit);
    CHECK(estimate_memory(*build(best + 1), o).total() > limit);
    const std::int64_t old = largest_batch(build, o, limit, false);
    CHECK(old * 2 < best);
    CHECK(estimate_memory(*build(old), o).total_unplanned() <= limit);
    CHECK(estimate_memory(*build(old + 1), o).total_unplanned() > limit);
  }
  // Not even one image: the CUDA context alone is larger than the limit.
  MemoryEstimateOptions o;
  o.cuda = true;
  CHECK(largest_batch([&](std::int64_t b) { return dry(*backend, "lenet", b, NetPurpose::training); }, o,
                      std::size_t{256} << 20) == 0);
}

TEST_CASE("on a GPU of known size the workspace is the cap that the rest leaves, never less than 512 MiB",
          "[net][memory]") {
  ::unsetenv("DPTRAIN_CUDNN_WORKSPACE_MB");
  auto backend = make_cpu_backend();
  auto net = dry(*backend, "resnet50", 64, NetPurpose::training);
  MemoryEstimateOptions o;
  o.cuda = true;
  o.precision = Precision::bf16;
  const MemoryEstimate unknown = estimate_memory(*net, o);  // no device: the 512 MiB floor
  const std::size_t rest = unknown.total() - kWorkspaceFloorBytes;
  constexpr std::size_t GiB = std::size_t{1} << 30;
  o.device_bytes = rest + 8 * GiB;  // 8 GiB left: a quarter of it
  CHECK(estimate_memory(*net, o).workspace == unknown.workspace - kWorkspaceFloorBytes + 2 * GiB);
  o.device_bytes = rest + 100 * GiB;  // an H200's worth left: the 4 GiB ceiling
  CHECK(estimate_memory(*net, o).workspace == unknown.workspace - kWorkspaceFloorBytes + 4 * GiB);
  o.device_bytes = rest + GiB / 2;  // hardly anything left: the plan still counts the floor
  CHECK(estimate_memory(*net, o).workspace == unknown.workspace);
  o.workspace_cap = 3 * GiB;  // a running backend's own cap wins
  CHECK(estimate_memory(*net, o).workspace == unknown.workspace - kWorkspaceFloorBytes + 3 * GiB);
  // The largest batch is the same with and without the device's size: at that batch the floor is what is left.
  auto build = [&](std::int64_t batch) { return dry(*backend, "resnet50", batch, NetPurpose::training); };
  MemoryEstimateOptions known = o, plain = o;
  known.workspace_cap = plain.workspace_cap = 0;
  known.device_bytes = std::size_t{16} << 30;
  plain.device_bytes = 0;
  CHECK(largest_batch(build, known, known.device_bytes) == largest_batch(build, plain, known.device_bytes));
  // One buffer per tensor leaves less free: its workspace follows its own total, and its largest batch too.
  CHECK(largest_batch(build, known, known.device_bytes, false) ==
        largest_batch(build, plain, known.device_bytes, false));
  const MemoryEstimate at64 = estimate_memory(*net, known);
  CHECK(at64.unplanned_workspace < at64.workspace);
  CHECK(at64.total_unplanned() <= known.device_bytes + at64.unplanned_workspace);
}
