#pragma once
// The memory part of `dptrain inspect --model`: what one rank needs to train (or evaluate) a model at a
// batch size in a precision, planned and with one buffer per tensor, and the largest batch that fits
// --memory-limit.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "dptrain/net/memory_estimate.hpp"
#include "dptrain/net/models/registry.hpp"

namespace dptrain::app {

struct MemoryQuery {
  std::int64_t batch = 32;
  std::string precision = "fp32";
  std::string backend = "auto";  // auto: cuda for bf16 and fp16 (the CPU trains in fp32 only), else cpu
  std::string memory_limit;      // empty: no limit asked
  int ranks = 1;
  bool inference = false;  // the forward-only plan of `dptrain eval`
};

// Returns the options, so that the command can exclude them where they mean nothing.
std::vector<CLI::Option*> add_memory_query_options(CLI::App* cmd, MemoryQuery& query);

struct MemoryReport {
  std::string model;
  MemoryQuery query;
  MemoryEstimateOptions options;
  MemoryEstimate estimate;
  std::size_t limit = 0;      // 0: none asked
  std::int64_t largest = -1;  // the largest batch within the limit (planned), -1 when none asked
  std::int64_t largest_unplanned = -1;
};

// `config` is the model's configuration apart from the batch, the purpose and the allocation.
MemoryReport memory_report(const std::string& model, ModelConfig config, const MemoryQuery& query);
void print_memory_report(std::ostream& out, const MemoryReport& report);
nlohmann::json to_json(const MemoryReport& report);

}  // namespace dptrain::app
