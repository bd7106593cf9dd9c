#pragma once
// cuDNN's algorithm search (cudnnFind*Ex times every candidate on the device) once per convolution
// shape, pass and precision in a backend, instead of once per layer: ResNet-50 repeats each of its
// bottleneck shapes up to six times, and Inception's branches repeat theirs across modules.
#include <cudnn.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "dptrain/backend/specs.hpp"
#include "dptrain/backend/tuned_choices.hpp"
#include "dptrain/core/tensor.hpp"

namespace dptrain::cuda {

// What the search chose for one pass of one shape (the algorithm as cuDNN's enum value of that pass).
struct FoundAlgorithm {
  int algo = 0;
  std::size_t workspace = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // the math type cuDNN timed the algorithm with
  bool adopted = false;  // taken from elsewhere (adopt()): the plan checks it fits before it runs it
};

// Which of cuDNN's timed results (sorted fastest first, as cudnnFind*Ex returns them) a search takes:
// the fastest that ran and, when `deterministic`, whose `determinism` is CUDNN_DETERMINISTIC (an
// atomics-based algorithm sums in another order at every run, which breaks a bit-exact resume and
// the same-step-twice check). -1 when none ran; `fell_back` is set when only a nondeterministic one
// ran, which is then taken (and counted) rather than failing the run.
template <typename Perf>
int pick_algorithm(const Perf* results, int returned, bool deterministic, bool& fell_back) {
  fell_back = false;
  int fastest = -1;
  for (int i = 0; i < returned; ++i) {
    if (results[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (fastest < 0) fastest = i;
    if (!deterministic || results[i].determinism == CUDNN_DETERMINISTIC) return i;
  }
  fell_back = fastest >= 0;
  return fastest;
}

// cuDNN's name of an algorithm of a pass ("forward", "backward-data", "backward-weights"), without
// the enum's prefix: IMPLICIT_PRECOMP_GEMM, ALGO_1, WINOGRAD_NONFUSED...; "#N" for one it does not know.
std::string algorithm_name(const char* pass, int algo);
const char* math_type_name(cudnnMathType_t math);

// The search record of cuDNN's timed results (sorted fastest first) for `pass`: the fastest, the
// fastest deterministic and the one at `pick`.
template <typename Perf>
ConvolutionSearch describe_search(const char* pass, const Perf* results, int returned, int pick,
                                  std::size_t workspace_cap) {
  ConvolutionSearch s;
  s.workspace_cap_bytes = workspace_cap;
  for (int i = 0; i < returned; ++i) {
    const Perf& r = results[i];
    if (r.status != CUDNN_STATUS_SUCCESS) continue;
    if (s.fastest_ms < 0) {
      s.fastest_ms = r.time;
      s.fastest_algorithm = algorithm_name(pass, static_cast<int>(r.algo));
    }
    if (s.fastest_deterministic_ms < 0 && r.determinism == CUDNN_DETERMINISTIC) {
      s.fastest_deterministic_ms = r.time;
      s.fastest_deterministic_algorithm = algorithm_name(pass, static_cast<int>(r.algo));
    }
  }
  if (pick >= 0 && pick < returned) {
    s.chosen_ms = results[pick].time;
    s.chosen_algorithm = algorithm_name(pass, static_cast<int>(results[pick].algo));
    s.math = math_type_name(results[pick].mathType);
    s.workspace_bytes = results[pick].memory;
  }
  return s;
}

class AlgorithmCache {
 public:
  // The identity of a search: the pass, the element type and everything of the spec that cuDNN's
  // descriptors see (the bias does not reach cuDNN's convolution, and the name does not matter).
  static std::string key(const char* pass, DType type, const ConvolutionSpec& spec);

  // The choice for `key`, or nullptr; `count_reuse`: a plan's first look-up (a search saved), not
  // its look again after adopt().
  const FoundAlgorithm* find(const std::string& key, bool count_reuse = true);
  // `search`: what the search timed, for `dptrain bench --layers` (its key is set here).
  void add(const std::string& key, const FoundAlgorithm& found, double seconds, bool fell_back = false,
           ConvolutionSearch search = {});
  AlgorithmSearchStats stats() const { return stats_; }
  // Every search add() recorded, in order, with how many layers looked its key up.
  std::vector<ConvolutionSearch> searches() const { return searches_; }
  // A plan runs a choice with this workspace (its own query's figure, for an adopted choice too).
  void note_workspace_in_use(std::size_t bytes) { largest_in_use_ = std::max(largest_in_use_, bytes); }
  // The largest workspace a plan has run a choice with: what they need once the searches are over.
  std::size_t largest_workspace() const { return largest_in_use_; }

  // Whether searches take deterministic algorithms only (the default; --nondeterministic turns it off).
  bool deterministic() const { return deterministic_; }
  void set_deterministic(bool deterministic) { deterministic_ = deterministic; }

  // Every choice as JSON text, under `fingerprint` (the GPU, the cuDNN version and the policy the
  // choices are valid for): what rank 0 broadcasts and a checkpoint stores.
  std::string to_text(const std::string& fingerprint) const;
  // Takes the choices of to_text() made under the same fingerprint, replacing this cache's for the
  // same keys; the plans look again at their next run (generation()). Text that is not such JSON,
  // or any entry out of range, is refused whole with the reason: it may come from a file.
  AdoptedChoices adopt(const std::string& text, const std::string& fingerprint);
  // Bumped by every adopt() that took something: a plan whose choice is older looks it up again.
  int generation() const { return generation_; }

 private:
  std::map<std::string, FoundAlgorithm> found_;
  std::vector<ConvolutionSearch> searches_;
  std::size_t largest_in_use_ = 0;
  AlgorithmSearchStats stats_;
  bool deterministic_ = true;
  int generation_ = 0;
};

}  // namespace dptrain::cuda
