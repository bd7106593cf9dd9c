#pragma once
// What a backend decides by measuring rather than by rule: cuDNN's convolution algorithms, timed on
// the device the first time each shape runs. Timing is noisy, so two runs (or two ranks) may pick
// different algorithms, which compute the same sums in different orders: a resumed run would then not
// continue bit for bit. So the choices can be carried: rank 0's are taken by every rank, and a
// checkpoint stores them for the run that resumes from it.
#include <cstddef>
#include <string>

namespace dptrain {

// The convolution algorithm searches a backend made so far (cuDNN times the candidates once per
// distinct shape and pass; a repeated shape reuses the choice); all zero where nothing is searched.
struct AlgorithmSearchStats {
  int searches = 0;
  int reused = 0;
  double seconds = 0;
  int nondeterministic_fallbacks = 0;  // searches that found no deterministic algorithm that ran
  int adopted = 0;                     // choices taken from elsewhere (rank 0, a checkpoint)
};

// One convolution algorithm search as cuDNN timed it (`dptrain bench --layers`): for a shape and pass,
// the fastest algorithm of all, the fastest deterministic one and the one taken, each with cuDNN's
// own time for it. Times are negative where there is no such algorithm (none deterministic ran).
struct ConvolutionSearch {
  std::string layer;  // the first layer that searched this shape
  std::string key;    // the pass, element type and shape, as the algorithm cache names it
  int layers = 1;     // the layers that run this shape and pass (the first one searched, the rest reused)
  std::string fastest_algorithm, fastest_deterministic_algorithm, chosen_algorithm;
  double fastest_ms = -1, fastest_deterministic_ms = -1, chosen_ms = -1;
  std::string math;                     // the chosen algorithm's math type
  std::size_t workspace_bytes = 0;      // the chosen algorithm's workspace
  std::size_t workspace_cap_bytes = 0;  // the most the search allowed
};

// The outcome of offering a backend choices made elsewhere: how many it took, or why it took none.
struct AdoptedChoices {
  int taken = 0;
  std::string refused;  // empty when taken; else one sentence (another GPU, library or policy; unreadable)
};

}  // namespace dptrain
