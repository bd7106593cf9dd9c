// The checkpoint half of `dptrain inspect`: what a checkpoint holds, read and validated exactly as a
// resume would read it, so "inspect says it is fine" means "a resume will load it".
#include "inspect_checkpoint.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "dptrain/ckpt/checkpoint_directory.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/checkpoint_summary.hpp"
#include "dptrain/core/json_line.hpp"

namespace dptrain::app {
namespace {
void print_table(const char* title, const nlohmann::json& rows) {
  std::int64_t values = 0;
  for (const auto& r : rows) values += r["count"].get<std::int64_t>();
  std::printf("\n%s: %zu tensors, %lld values\n", title, rows.size(), static_cast<long long>(values));
  if (rows.empty()) return;
  std::printf("%-44s %-18s %10s %11s %11s %11s %11s %11s\n", "name", "shape", "count", "mean", "std", "min", "max",
              "L2 norm");
  for (const auto& r : rows) {
    const std::string shape = Shape(r["shape"].get<std::vector<std::int64_t>>()).to_string();
    auto number = [&](const char* key) { return r[key].is_number() ? r[key].get<double>() : std::nan(""); };
    std::printf("%-44s %-18s %10lld %11.4g %11.4g %11.4g %11.4g %11.4g\n", r["name"].get<std::string>().c_str(),
                shape.c_str(), static_cast<long long>(r["count"].get<std::int64_t>()), number("mean"), number("std"),
                number("min"), number("max"), number("l2_norm"));
  }
}

void print_human(const nlohmann::json& j, const ckpt::TrainingState& state) {
  const auto& lr = j["learning_rate"];
  const auto& o = j["optimizer"];
  std::printf("checkpoint       %s (%.1f MB)\n", j["path"].get<std::string>().c_str(),
              static_cast<double>(j["bytes"].get<std::uintmax_t>()) / 1e6);
  std::printf("model            %s\n", j["model"].get<std::string>().c_str());
  std::printf("step             %lld\n", static_cast<long long>(j["step"].get<std::int64_t>()));
  std::printf("epoch            %lld (0-based), %lld samples of it seen\n",
              static_cast<long long>(j["epoch"].get<std::int64_t>()),
              static_cast<long long>(j["samples_in_epoch"].get<std::int64_t>()));
  std::printf("world size       %lld at save\n", static_cast<long long>(j["world_size"].get<std::int64_t>()));
  std::printf("global batch     %lld\n", static_cast<long long>(j["global_batch"].get<std::int64_t>()));
  std::printf("learning rate    %s, base %g (%g per 256), warm-up %lld steps, %lld steps in all\n",
              lr["schedule"].get<std::string>().c_str(), lr["base"].get<double>(), lr["per_256"].get<double>(),
              static_cast<long long>(lr["warmup_steps"].get<std::int64_t>()),
              static_cast<long long>(lr["total_steps"].get<std::int64_t>()));
  std::printf("optimizer        %s, momentum %g, weight decay %g%s%s\n", o["type"].get<std::string>().c_str(),
              o["momentum"].get<double>(), o["weight_decay"].get<double>(),
              o["nesterov"].get<bool>() ? ", nesterov" : "",
              o["decay_all"].get<bool>() ? ", decay on all parameters" : "");
  std::printf("seed             %llu\n", static_cast<unsigned long long>(j["seed"].get<std::uint64_t>()));
  std::printf("loss scale       %g\n", j["loss_scale"].get<double>());
  std::printf("dptrain version  %s\n", j["dptrain_version"].get<std::string>().c_str());
  const auto& c = j["configuration"];
  std::printf("configuration    %s\n", (c.is_string() ? c.get<std::string>() : json_text(c)).c_str());
  std::printf("\nprogress (/progress attributes):\n");
  for (const NamedFieldValue& f : field_values(state.progress)) {
    std::printf("  %-24s %s\n", f.name.c_str(), field_value_text(f.value).c_str());
  }
  print_table("parameters", j["parameters"]);
  print_table("buffers", j["buffers"]);
  print_table("momentum", j["momentum"]);
}
}  // namespace

int inspect_checkpoint(const std::string& path, bool json) {
  const std::string file = ckpt::resolve_checkpoint_path(path);
  const ckpt::TrainingState state = ckpt::read_checkpoint(file);
  const nlohmann::json j = ckpt::checkpoint_summary(state, std::filesystem::file_size(file));
  if (json) {
    std::cout << json_text(j) << "\n";
  } else {
    print_human(j, state);
  }
  return 0;
}

}  // namespace dptrain::app
