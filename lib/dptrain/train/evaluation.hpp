#pragma once
// Evaluation over a split, split among the ranks: each scores its slice of every batch, and the sums
// are reduced, so the result is the same on any number of ranks (every sample is scored once; the
// padding of the last batch is not: neither in the top-k nor in the loss). A loss that is not finite
// is an error, not a result.
#include <cstdint>
#include <ostream>
#include <string>

#include "dptrain/data/loader.hpp"
#include "dptrain/distributed/communicator.hpp"
#include "dptrain/train/trainer.hpp"

namespace dptrain {

struct Evaluation {
  double loss = 0, top1 = 0, top5 = 0;
  std::int64_t samples = 0;
  double seconds = 0;
};

// `loader` is an evaluation loader (training off) of this rank. `progress`: where a line at least
// every ten seconds says how far it got ("validation: 3200 of 10000 images (32%), 10 s"; null on the
// ranks that print nothing), `what` its first word.
Evaluation evaluate(Net& net, Trainer& trainer, data::Loader& loader, distributed::Communicator& comm,
                    std::ostream* progress = nullptr, const std::string& what = "evaluation");

}  // namespace dptrain
