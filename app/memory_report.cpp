#include "memory_report.hpp"

#include <iomanip>

#include "dptrain/core/byte_size.hpp"
#include "option_checks.hpp"

namespace dptrain::app {

std::vector<CLI::Option*> add_memory_query_options(CLI::App* cmd, MemoryQuery& q) {
  const char* group = "Memory (with --model)";
  std::vector<CLI::Option*> added{
      cmd->add_option("--batch-size", q.batch, "Images per rank for the memory figures")
          ->check(in_range(1, static_cast<double>(kMaxBatch)))
          ->capture_default_str(),
      cmd->add_option("--precision", q.precision, "Activation arithmetic: fp32, bf16 or fp16")
          ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
          ->capture_default_str(),
      cmd->add_option(
             "--backend", q.backend,
             "Whose workspace to count: cpu, cuda (cuDNN workspace, CUDA context) or auto (cuda for bf16/fp16)")
          ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
          ->capture_default_str(),
      cmd->add_option("--memory-limit", q.memory_limit,
                      "Also print the largest batch per rank that fits this much memory (16GiB for a P100, 141GiB "
                      "for an H200)"),
      cmd->add_option("--ranks", q.ranks,
                      "Ranks in the job (the allreduce works in the gradients' own memory: no extra per rank)")
          ->check(at_least(1))
          ->capture_default_str(),
      cmd->add_flag("--inference", q.inference, "The forward-only plan that dptrain eval uses instead of training's")};
  for (CLI::Option* o : added) o->group(group);
  return added;
}

MemoryReport memory_report(const std::string& model, ModelConfig config, const MemoryQuery& q) {
  MemoryReport r;
  r.model = model;
  r.query = q;
  r.options.purpose = q.inference ? NetPurpose::inference : NetPurpose::training;
  r.options.precision = parse_precision(q.precision);
  const bool cuda = q.backend == "cuda" || (q.backend == "auto" && r.options.precision != Precision::fp32);
  DPTRAIN_CHECK(cuda || r.options.precision == Precision::fp32, "--precision ", q.precision,
                " trains on the cuda backend only; the CPU backend computes in fp32");
  r.query.backend = cuda ? "cuda" : "cpu";
  r.options.cuda = cuda;
  r.options.ranks = q.ranks;
  auto backend = make_cpu_backend();  // shapes and plans are the same on every backend
  config.memory = MemoryOptions{r.options.purpose, true, false};
  auto build = [&](std::int64_t batch) {
    ModelConfig c = config;
    c.batch = static_cast<int>(batch);
    return build_model(model, *backend, c);
  };
  // A limit is the device's memory: the cuDNN workspace cap follows what the rest leaves of it.
  if (!q.memory_limit.empty()) r.options.device_bytes = parse_byte_size(q.memory_limit, "--memory-limit");
  r.estimate = estimate_memory(*build(q.batch), r.options);
  if (!q.memory_limit.empty()) {
    r.limit = r.options.device_bytes;
    r.largest = largest_batch(build, r.options, r.limit, true);
    r.largest_unplanned = largest_batch(build, r.options, r.limit, false);
  }
  return r;
}

namespace {
void row(std::ostream& out, const char* what, std::size_t planned, std::size_t unplanned, const char* note = "") {
  out << "  " << std::left << std::setw(26) << what << std::right << std::setw(12)
      << format_bytes(static_cast<double>(planned)) << std::setw(16) << format_bytes(static_cast<double>(unplanned))
      << (*note ? "  " : "") << note << "\n";
}
}  // namespace

void print_memory_report(std::ostream& out, const MemoryReport& r) {
  const MemoryEstimate& e = r.estimate;
  const bool training = r.options.purpose == NetPurpose::training;
  out << (training ? "training" : "inference (dptrain eval)") << " memory per rank: batch " << e.batch << ", "
      << r.query.precision << ", " << r.query.backend << " backend" << (r.query.ranks > 1 ? ", several ranks" : "")
      << "\n";
  out << "  " << std::left << std::setw(26) << "" << std::right << std::setw(12) << "planned" << std::setw(16)
      << "one per tensor"
      << "\n";
  row(out, "parameters (fp32)", e.parameters, e.parameters);
  if (training) {
    row(out, "parameter gradients", e.gradients, e.gradients);
    row(out, "optimizer state", e.optimizer, e.optimizer, "SGD momentum");
  }
  row(out, training ? "activations + gradients" : "activations", e.activations, e.unplanned_activations);
  row(out, "layer state", e.layer_state, e.layer_state, "pooling indices, LRN, dropout masks, probabilities");
  row(out, "input batch", e.inputs, e.inputs);
  row(out, "workspace", e.workspace, e.unplanned_workspace,
      r.options.cuda ? "cuDNN workspace cap, low-precision weight copies" : "oneDNN's blocked weight copies");
  if (e.reserved) row(out, "CUDA context (reserved)", e.reserved, e.reserved, "cuBLAS and cuDNN loaded; an estimate");
  row(out, "total", e.total(), e.total_unplanned());
  out << "  per image: "
      << format_bytes(static_cast<double>(e.activations + e.layer_state + e.inputs) / static_cast<double>(e.batch))
      << " planned, "
      << format_bytes(static_cast<double>(e.unplanned_activations + e.layer_state + e.inputs) /
                      static_cast<double>(e.batch))
      << " with one buffer per tensor\n";
  if (r.limit) {
    auto batch = [](std::int64_t b) { return (b >= kMaxBatch ? "at least " : "") + std::to_string(b); };
    out << "largest batch per rank in " << format_bytes(static_cast<double>(r.limit)) << ": " << batch(r.largest)
        << " (one buffer per tensor: " << batch(r.largest_unplanned) << ")\n";
    if (r.largest == 0) out << "  not even one image fits: use a smaller model, --precision bf16, or more memory\n";
  }
}

nlohmann::json to_json(const MemoryReport& r) {
  const MemoryEstimate& e = r.estimate;
  nlohmann::json j{{"purpose", r.options.purpose == NetPurpose::training ? "training" : "inference"},
                   {"batch_size", e.batch},
                   {"precision", r.query.precision},
                   {"backend", r.query.backend},
                   {"ranks", r.query.ranks},
                   {"parameters_bytes", e.parameters},
                   {"gradients_bytes", e.gradients},
                   {"optimizer_bytes", e.optimizer},
                   {"activations_bytes", e.activations},
                   {"activations_unplanned_bytes", e.unplanned_activations},
                   {"layer_state_bytes", e.layer_state},
                   {"inputs_bytes", e.inputs},
                   {"workspace_bytes", e.workspace},
                   {"reserved_bytes", e.reserved},
                   {"total_bytes", e.total()},
                   {"total_unplanned_bytes", e.total_unplanned()}};
  if (r.limit) {
    j["memory_limit_bytes"] = r.limit;
    j["largest_batch"] = r.largest;
    j["largest_batch_unplanned"] = r.largest_unplanned;
  }
  return j;
}

}  // namespace dptrain::app
