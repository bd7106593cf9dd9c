#pragma once
// Each subcommand registers its options on the CLI11 app and returns the function that runs it.
#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

#include "dptrain/net/step_hooks.hpp"

namespace dptrain::app {

using Command = std::function<int()>;

Command add_info_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_data_command(CLI::App& app);
// `step_hooks`: added to every run's net (command_line.hpp).
Command add_train_command(CLI::App& app, std::vector<StepHooks*> step_hooks);
Command add_eval_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_plot_command(CLI::App& app);
Command add_preflight_command(CLI::App& app);
Command add_predict_command(CLI::App& app);
Command add_export_command(CLI::App& app);
Command add_import_command(CLI::App& app);

}  // namespace dptrain::app
