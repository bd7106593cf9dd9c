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
#include "dptrain/core/exit_codes.hpp"
#include "dptrain/distributed/launcher.hpp"
#include "option_checks.hpp"

namespace {
// One clear line and a non-zero exit; in a multi-rank job every rank is ended with it, since the
// others would otherwise wait in their next collective until the job's time limit.
int fail(const std::string& message, int code = dptrain::exit_code::error) {
  if (dptrain::distributed::in_multi_rank_job()) dptrain::distributed::abort_job("error: " + message, code);
  std::cerr << "dptrain: error: " << message << "\n";
  return code;
}

// CLI11's exit code for a refused command line, as one of ours (core/exit_codes.hpp): CLI11 has a
// code for each of its checks, and a script should not need to know them all.
int option_exit_code(const CLI::ParseError& e) {
  namespace code = dptrain::exit_code;
  switch (static_cast<CLI::ExitCodes>(e.get_exit_code())) {
    case CLI::ExitCodes::RequiredError:
    case CLI::ExitCodes::RequiresError: return code::option_missing;
    case CLI::ExitCodes::ExcludesError: return code::option_conflict;
    case CLI::ExitCodes::ExtrasError:
    case CLI::ExitCodes::OptionNotFound: return code::option_unknown;
    default: return code::option_value;  // conversion, validation, a wrong number of values
  }
}
// CLI11's words for a refused command line, except a value that does not fit its option's type,
// which CLI11 words "Could not convert: --epochs = 4294967297".
std::string parse_error_message(const CLI::ParseError& e) {
  const std::string what = e.what();
  const std::string prefix = "Could not convert: ", separator = " = ";
  const std::size_t split = what.find(separator);
  if (dynamic_cast<const CLI::ConversionError*>(&e) == nullptr || what.rfind(prefix, 0) != 0 ||
      split == std::string::npos) {
    return what;
  }
  return what.substr(prefix.size(), split - prefix.size()) + ": '" + what.substr(split + separator.size()) +
         "' is not a value this option can hold (a whole number in its range)";
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
  check_integer_options(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version end here too, with code 0 and their text on stdout.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    const CLI::App* where = &app;
    for (const CLI::App* sub : app.get_subcommands()) where = sub;
    std::cerr << "dptrain: error: " << parse_error_message(e) << "\n"
              << "Run 'dptrain" << (where == &app ? "" : " " + where->get_name()) << " --help' for the options.\n";
    return option_exit_code(e);
  }
  try {
    for (auto& [sub, run] : commands) {
      if (sub->parsed()) return run();
    }
  } catch (const OptionError& e) {
    return fail(e.what(), e.code());
  } catch (const Error& e) {
    return fail(e.what());
  } catch (const std::exception& e) {
    return fail(std::string("unexpected: ") + e.what());
  }
  return 1;
}

}  // namespace dptrain::app
