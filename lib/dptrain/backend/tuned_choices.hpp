#pragma once
// What a backend decides by measuring rather than by rule: cuDNN's convolution algorithms, timed on
// the device the first time each shape runs. Timing is noisy, so two runs (or two ranks) may pick
// different algorithms, which compute the same sums in different orders: a resumed run would then not
// continue bit for bit. So the choices can be carried: rank 0's are taken by every rank, and a
// checkpoint stores them for the run that resumes from it.
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

// The outcome of offering a backend choices made elsewhere: how many it took, or why it took none.
struct AdoptedChoices {
  int taken = 0;
  std::string refused;  // empty when taken; else one sentence (another GPU, library or policy; unreadable)
};

}  // namespace dptrain
