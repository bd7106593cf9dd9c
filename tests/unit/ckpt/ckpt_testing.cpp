#include "ckpt_testing.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "dptrain/core/philox.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/synthetic.hpp"

namespace dptrain::testing {
namespace fs = std::filesystem;

ScratchDirectory::ScratchDirectory(const std::string& tag) {
  static std::atomic<int> counter{0};
  path_ = (fs::temp_directory_path() /
           ("dptrain-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)))
              .string();
  fs::remove_all(path_);
  fs::create_directories(path_);
}

ScratchDirectory::~ScratchDirectory() {
  // DPTRAIN_TEST_KEEP=1 keeps the files, to look at a failure (or a checkpoint) by hand.
  if (const char* keep = std::getenv("DPTRAIN_TEST_KEEP"); keep && std::string(keep) == "1") return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

namespace {
Tensor random_values(std::int64_t elements, std::uint64_t seed, std::uint64_t stream) {
  Tensor t = Tensor::empty(Shape{elements});
  const CounterRng rng(seed, stream);
  for (std::int64_t i = 0; i < elements; ++i) t.data<float>()[i] = rng.normal(static_cast<std::uint64_t>(i));
  return t;
}
}  // namespace

ckpt::TrainingState synthetic_state(std::int64_t step, int tensors, std::int64_t elements, std::uint64_t seed) {
  ckpt::TrainingState s;
  s.model = "synthetic";
  for (int i = 0; i < tensors; ++i) {
    const std::string name = "layer" + std::to_string(i) + "/weight";
    s.parameters.push_back({name, random_values(elements, seed, static_cast<std::uint64_t>(2 * i))});
    s.optimizer.momentum.push_back({name, random_values(elements, seed, static_cast<std::uint64_t>(2 * i + 1))});
  }
  s.buffers.push_back({"bn/running_mean", random_values(8, seed, 999)});
  s.progress.global_step = step;
  s.progress.epoch = step / 100;
  s.progress.samples_in_epoch = (step % 100) * 32;
  s.progress.global_batch = 32;
  s.configuration = R"({"model": "synthetic"})";
  s.dptrain_version = "test";
  return s;
}

TrainedModel trained_model(const std::string& name, int classes, std::uint64_t seed, int steps) {
  TrainedModel m;
  m.name = name;
  m.backend = make_cpu_backend();
  ModelConfig model;
  model.batch = 4;
  model.channels = 1;
  model.classes = classes;
  model.image_size = 28;
  m.net = build_model(name, *m.backend, model);
  m.net->initialize(seed);
  TrainerConfig config;
  config.seed = seed;
  config.schedule.kind = ScheduleKind::constant;
  config.schedule.global_batch = 4;
  m.trainer = std::make_unique<Trainer>(*m.net, config);
  for (int s = 0; s < steps; ++s) {
    fill_synthetic_batch(*m.backend, seed, s * 4, classes, m.net->images(), m.net->labels());
    m.trainer->step(0, s * 4);
  }
  return m;
}

std::vector<Tensor> snapshot(TrainedModel& m) {
  std::vector<Tensor> out;
  for (Parameter* p : m.net->parameters()) out.push_back(m.backend->to_host(p->value));
  for (Buffer* b : m.net->buffers()) out.push_back(m.backend->to_host(b->value));
  for (Buffer& v : m.trainer->optimizer().momentum_buffers()) out.push_back(m.backend->to_host(v.value));
  return out;
}

bool identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].shape() != b[i].shape() || a[i].bytes() != b[i].bytes()) return false;
    if (a[i].bytes() && std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) != 0) return false;
  }
  return true;
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace dptrain::testing
