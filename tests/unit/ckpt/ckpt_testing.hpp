#pragma once
// Helpers for the checkpoint tests: scratch directories, small synthetic states, a trained model and
// byte-for-byte comparison of tensors.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dptrain/ckpt/training_state.hpp"
#include "dptrain/net/net.hpp"
#include "dptrain/train/trainer.hpp"

namespace dptrain::testing {

// A fresh empty directory under the system's temporary directory, removed with everything in it when
// the object goes (unless DPTRAIN_TEST_KEEP=1).
class ScratchDirectory {
 public:
  explicit ScratchDirectory(const std::string& tag);
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A state without a model: `tensors` parameters of `elements` values each (named "layer<i>/weight",
// values from `seed`), their momentum, one buffer, at `step`. Fast to write, for directory tests.
ckpt::TrainingState synthetic_state(std::int64_t step, int tensors = 3, std::int64_t elements = 1000,
                                    std::uint64_t seed = 1);

// A registry model on the CPU backend, initialized from `seed` and trained `steps` steps on synthetic
// data (so the momentum buffers are not zero).
struct TrainedModel {
  std::string name;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Net> net;
  std::unique_ptr<Trainer> trainer;
};
TrainedModel trained_model(const std::string& name, int classes, std::uint64_t seed, int steps);

// Host copies of every parameter, buffer and momentum buffer, in order.
std::vector<Tensor> snapshot(TrainedModel& m);
// Whether two lists of tensors have the same shapes and the same bytes (memcmp).
bool identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b);

// The whole file's bytes, and writing them back.
std::vector<char> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<char>& bytes);

}  // namespace dptrain::testing
