// The command line of dptrain. Subcommands live in their own files; this one sets up the process,
// dispatches, and turns any dptrain::Error into one clear line on stderr and a non-zero exit (on every
// rank of the job).
#include "command_line.hpp"

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <vector>

#include "commands.hpp"
#include "dptrain/core/crash_report.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/distributed/launcher.hpp"

namespace {
// One clear line and a non-zero exit; in a multi-rank job every rank is ended with it, since the
// others would otherwise wait in their next collective until the job's time limit.
int fail(const std::string& message) {
  if (dptrain::distributed::in_multi_rank_job()) dptrain::distributed::abort_job("error: " + message, 1);
  std::cerr << "dptrain: error: " << message << "\n";
  return 1;
}
}  // namespace

namespace dptrain::app {

int run_command_line(int argc, char** argv, const CommandLineExtensions& extensions) {
  // Before MPI_Init, which then leaves these handlers in place: a crashing rank names itself and where.
  install_crash_reporter();
  // A file-size limit (ulimit -f) then fails the write(2) that crosses it with EFBIG, which the
  // writer reports naming the file ("File too large") and cleans up after, instead of SIGXFSZ
  // killing the process with a half-written temporary behind.
  if (std::signal(SIGXFSZ, SIG_IGN) == SIG_ERR) std::cerr << "dptrain: warning: cannot ignore SIGXFSZ\n";
  // Under srun stdout is a pipe, which C buffers in 4 KiB blocks: log lines would reach the job's
  // output late, and a crash would lose the last ones. One line at a time costs nothing here.
  if (std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ) != 0) std::cerr << "dptrain: warning: cannot line-buffer stdout\n";
  CLI::App app{"dptrain " DPTRAIN_VERSION
               ": data-parallel CNN training on GPU clusters (MPI + NCCL, cuDNN or oneDNN, HDF5 data and checkpoints)"};
  app.set_version_flag("--version", "dptrain " DPTRAIN_VERSION);
  app.require_subcommand(1);

  std::map<CLI::App*, Command> commands;
  // Each add_*_command creates one subcommand; remember which function runs it.
  auto add = [&](const std::function<Command(CLI::App&)>& add_command) {
    Command run = add_command(app);
    commands[app.get_subcommands({}).back()] = std::move(run);
  };
  add(add_info_command);
  add(add_inspect_command);
  add(add_bench_command);
  add(add_data_command);
  add([&](CLI::App& a) { return add_train_command(a, extensions.train_step_hooks); });
  add(add_eval_command);
  add(add_report_command);
  add(add_plot_command);
  add(add_preflight_command);
  add(add_predict_command);
  add(add_export_command);
  add(add_import_command);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : commands) {
      if (sub->parsed()) return run();
    }
  } catch (const Error& e) {
    return fail(e.what());
  } catch (const std::exception& e) {
    return fail(std::string("unexpected: ") + e.what());
  }
  return 1;
}

}  // namespace dptrain::app
