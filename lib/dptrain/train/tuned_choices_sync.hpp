#pragma once
// The tuned choices of a run's backend (cuDNN's convolution algorithms, backend/tuned_choices.hpp)
// made the same on every rank and across a resume, so a GPU run computes the same sums in the same
// order on every rank and continues bit for bit from a checkpoint.
#include <ostream>
#include <string>

#include "dptrain/backend/backend.hpp"
#include "dptrain/distributed/communicator.hpp"

namespace dptrain {

// Collective. Every rank's backend adopts `text` (the same on every rank), the choices of `source`
// ("the checkpoint"); `out` (rank 0's) says how many were taken, or why some rank took none (another
// GPU, cuDNN version or --nondeterministic: that rank then searches as usual). Nothing when `text` is
// empty.
void adopt_tuned_choices(Backend& backend, const std::string& text, const std::string& source,
                         distributed::Communicator& comm, std::ostream& out);

// Collective, after the first step (every convolution has chosen): rank 0's choices are taken by the
// other ranks, whose own searches may have timed differently.
void share_rank0_tuned_choices(Backend& backend, distributed::Communicator& comm, std::ostream& out);

}  // namespace dptrain
