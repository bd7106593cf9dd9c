#include "dptrain/train/evaluation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "dptrain/core/progress_line.hpp"

namespace dptrain {

Evaluation evaluate(Net& net, Trainer& trainer, data::Loader& loader, distributed::Communicator& comm,
                    std::ostream* progress, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  loader.seek(0, 0);
  ProgressLine line(progress, what, loader.samples(), "images");
  std::int64_t slots = 0;  // this rank's batch places so far, padding included: times the ranks, about the images done
  // loss sum, top-1, top-5, samples: summed over the ranks at the end.
  double sums[4] = {0, 0, 0, 0};
  for (;;) {
    data::Batch batch = loader.next();
    if (batch.end) break;
    if (batch.valid == 0) continue;  // only padding on this rank
    net.backend().copy_from_host(batch.images, net.images());
    std::copy_n(batch.labels.data<std::int32_t>(), batch.labels.numel(), net.labels().data<std::int32_t>());
    // Padding samples of a final partial batch (repeats of real ones) count neither in the loss nor
    // in the top-k.
    net.set_counted_rows(batch.valid);
    const StepResult r = trainer.evaluate_batch();  // its top-k counts are of the counted rows only
    net.set_counted_rows(-1);
    sums[0] += r.loss * batch.valid;
    sums[1] += static_cast<double>(r.top1);
    sums[2] += static_cast<double>(r.top5);
    sums[3] += batch.valid;
    slots += batch.labels.numel();
    line.update(std::min(loader.samples(), slots * comm.size()));
  }
  comm.allreduce_sum(sums, 4);
  Evaluation e;
  e.samples = static_cast<std::int64_t>(sums[3]);
  if (e.samples > 0) {
    e.loss = sums[0] / sums[3];
    e.top1 = sums[1] / sums[3];
    e.top5 = sums[2] / sums[3];
  }
  // Every rank holds the same sums, so all of them stop here together: a loss that is not a number
  // is not a result (its top-k would be meaningless).
  DPTRAIN_CHECK(std::isfinite(e.loss), "the evaluation's loss over ", e.samples, " samples is ", e.loss,
                ": the net's scores are not finite (its weights diverged or the input is broken)");
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return e;
}

}  // namespace dptrain
