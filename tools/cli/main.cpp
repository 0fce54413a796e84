// dtsim: simulator of the communication in distributed deep-learning training.
// Exit codes: 0 success, 2 bad input (file, JSON pointer, what was expected), 1 internal error.

#include "tools/cli/command.hpp"

#include "sim/util/input_error.hpp"
#include "sim/util/one_line.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv)
{
  CLI::App app{"dtsim: predicts how long distributed deep-learning training takes, and why"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for all subcommands");

  dtsim::cli::Action action;
  dtsim::cli::add_run_command(app, action);
  dtsim::cli::add_sweep_command(app, action);
  dtsim::cli::add_topology_command(app, action);
  dtsim::cli::add_nccl_tests_command(app, action);
  dtsim::cli::add_calibrate_command(app, action);
  dtsim::cli::add_validate_command(app, action);
  dtsim::cli::add_explain_command(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "dtsim: command line: {}\n", dtsim::one_line(e.what()));
    return 2;
  }

  try {
    return action ? action() : 0;
  } catch (const dtsim::InputError& e) {
    fmt::print(stderr, "dtsim: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dtsim: internal error: {}\n", dtsim::one_line(e.what()));
    return 1;
  }
}
