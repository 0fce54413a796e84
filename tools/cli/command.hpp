// Each `dtsim` subcommand lives in its own file and registers itself on the CLI11 app here.
// A command's callback returns the process exit code; InputError becomes exit 2 in main().
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace dtsim::cli {

/// Set by the chosen subcommand's callback; main() runs it after parsing.
using Action = std::function<int()>;

void add_run_command(CLI::App& app, Action& action);
void add_sweep_command(CLI::App& app, Action& action);
void add_topology_command(CLI::App& app, Action& action);
void add_nccl_tests_command(CLI::App& app, Action& action);
void add_calibrate_command(CLI::App& app, Action& action);
void add_validate_command(CLI::App& app, Action& action);
void add_explain_command(CLI::App& app, Action& action);
void add_report_command(CLI::App& app, Action& action);
void add_compare_command(CLI::App& app, Action& action);

}  // namespace dtsim::cli
