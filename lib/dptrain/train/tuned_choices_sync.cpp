#include "dptrain/train/tuned_choices_sync.hpp"

#include <cstdint>

#include "dptrain/distributed/broadcast.hpp"

namespace dptrain {
namespace {
// `adopt` on the ranks it applies to; rank 0 reports the outcome on all of them.
void adopt_and_report(Backend& backend, const std::string& text, const std::string& source, bool on_rank0,
                      distributed::Communicator& comm, std::ostream& out) {
  AdoptedChoices adopted;
  const bool applies = on_rank0 || comm.rank() != 0;
  if (applies) adopted = backend.adopt_tuned_choices(text);
  // [ranks that refused, the most choices a rank took]
  std::int64_t counts[2] = {applies && !adopted.refused.empty() ? 1 : 0, adopted.taken};
  comm.allreduce(&counts[0], 1, distributed::ElementType::i64, distributed::ReduceOp::sum);
  comm.allreduce(&counts[1], 1, distributed::ElementType::i64, distributed::ReduceOp::max);
  if (counts[0] > 0) {
    out << "cuDNN algorithms: " << counts[0] << " rank" << (counts[0] == 1 ? "" : "s") << " did not take those of "
        << source << " and search their own"
        << (adopted.refused.empty() ? std::string() : " (rank 0: " + adopted.refused + ")") << "\n";
  } else if (counts[1] > 0) {
    out << "cuDNN algorithms: " << counts[1] << " choices taken from " << source << "\n";
  }
}
}  // namespace

void adopt_tuned_choices(Backend& backend, const std::string& text, const std::string& source,
                         distributed::Communicator& comm, std::ostream& out) {
  if (text.empty()) return;  // the same on every rank: nobody enters the collectives below
  adopt_and_report(backend, text, source, /*on_rank0=*/true, comm, out);
}

void share_rank0_tuned_choices(Backend& backend, distributed::Communicator& comm, std::ostream& out) {
  if (comm.size() == 1) return;
  std::string text = comm.rank() == 0 ? backend.tuned_choices() : std::string();
  distributed::broadcast_text(text, comm);
  if (text.empty()) return;
  adopt_and_report(backend, text, "rank 0", /*on_rank0=*/false, comm, out);
}

}  // namespace dptrain
