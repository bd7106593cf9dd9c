#pragma once
// Whether a training state holds only finite numbers. A run whose weights or momentum became NaN or
// infinite has diverged: such a state is never written as a checkpoint (it would become `latest` and
// every resume would continue from garbage), and `--resume` never continues from one (a checkpoint
// written by an older dptrain may hold one). `dptrain inspect` still reads them, to show the damage.
#include <optional>
#include <string>

#include "dptrain/ckpt/training_state.hpp"

namespace dptrain::ckpt {

// The first tensor (parameters, then buffers, then momentum buffers) holding a NaN or an infinity,
// described: "parameter conv1/weight holds 3 values that are not finite (the first, nan, at index
// 17)"; nullopt when every value is finite.
std::optional<std::string> find_non_finite(const TrainingState& state);

// Throws, naming the checkpoint `path` and the first tensor that is not finite ("checkpoint P: its
// parameter fc/weight holds ... (the run had diverged)"), when the state read from it holds a NaN or
// an infinity: what `--resume` and `dptrain eval` refuse to continue from or score.
void require_finite(const TrainingState& state, const std::string& path);

}  // namespace dptrain::ckpt
