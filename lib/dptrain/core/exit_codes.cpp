#include "dptrain/core/exit_codes.hpp"

#include <array>

namespace dptrain::exit_code {
namespace {
constexpr std::array<Meaning, 10> kTable{{
    {finished, "finished"},
    {error, "an error, named on one line (dptrain: error: ...)"},
    {checkpointed_stop,
     "stopped (a signal, Ctrl-C, the time limit or --stop-at-step) after writing a checkpoint: requeue or run "
     "again to continue"},
    {ranks_lost, "ranks stopped answering (their nodes named), or no usable node is left"},
    {slow_node, "dptrain preflight: a node measured below --min-fraction of the median"},
    {stopped_unsaved,
     "stopped (a signal, Ctrl-C, the time limit or --stop-at-step) with nothing saved: no "
     "--checkpoint-dir"},
    {option_value, "an option's value was refused (out of range, not a number, not one of the choices)"},
    {option_missing, "a required option is missing, or an option that another one needs"},
    {option_conflict, "options that cannot be given together"},
    {option_unknown, "an option or argument the command does not know"},
}};
}  // namespace

std::span<const Meaning> table() { return kTable; }
}  // namespace dptrain::exit_code
