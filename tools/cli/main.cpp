// dtsim: simulator of the communication in distributed deep-learning training.
// Exit codes: 0 success, 2 bad input (file, JSON pointer, what was expected), 1 internal error.

#include "tools/cli/command.hpp"
#include "sim/util/atomic_file.hpp"
#include "sim/util/did_you_mean.hpp"
#include "tools/cli/html_options.hpp"

#include "sim/util/input_error.hpp"
#include "sim/util/one_line.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <system_error>

namespace {

/// One line on standard error. A stderr that cannot be written (closed, a full disk, the reader of
/// `2>&1 | head` gone) loses the line but not the exit code: fmt::print would throw there, and a throw
/// from a handler below would abort the process.
void say(const std::string& line)
{
  std::fputs(line.c_str(), stderr);
}

}  // namespace

int main(int argc, char** argv)
{
  // A reader that goes away (dtsim ... | head) is a write that fails, reported below as any other
  // (one line, exit 2), not a SIGPIPE that kills the process without a word.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"dtsim: predicts how long distributed deep-learning training takes, and why"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for all subcommands");
  app.set_version_flag("--version", std::string("dtsim ") + DTSIM_VERSION);

  dtsim::cli::Action action;
  dtsim::cli::add_run_command(app, action);
  dtsim::cli::add_sweep_command(app, action);
  dtsim::cli::add_topology_command(app, action);
  dtsim::cli::add_nccl_tests_command(app, action);
  dtsim::cli::add_calibrate_command(app, action);
  dtsim::cli::add_validate_command(app, action);
  dtsim::cli::add_explain_command(app, action);
  dtsim::cli::add_report_command(app, action);
  dtsim::cli::add_compare_command(app, action);
  dtsim::cli::set_command_line(argc, argv);
  // No option of dtsim means anything with an empty value ("--trace ''" is a script's empty variable,
  // not "no trace"): refused on every option that takes one, of every command and subcommand.
  const CLI::Validator non_empty(
      [](std::string& value) { return value.empty() ? std::string("expected a value, got an empty one") : std::string(); },
      "");
  std::vector<CLI::App*> commands{&app};
  for (std::size_t i = 0; i < commands.size(); ++i) {
    for (CLI::App* sub : commands[i]->get_subcommands([](CLI::App*) { return true; }))
      commands.push_back(sub);
    for (CLI::Option* option : commands[i]->get_options([](CLI::Option* o) { return o->get_expected_min() > 0; }))
      option->check(non_empty);
  }

  // An unknown command: name the closest one.
  std::vector<std::string> names;
  const CLI::App& const_app = app;
  for (const auto* sub : const_app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  if (argc > 1 && argv[1][0] != '-' && std::find(names.begin(), names.end(), argv[1]) == names.end()) {
    const auto near = dtsim::closest_name(argv[1], names);
    say(fmt::format("dtsim: command line: unknown command '{}'{} (commands: {})\n", argv[1],
                    near ? fmt::format(", did you mean '{}'?", *near) : "", fmt::join(names, ", ")));
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    say(fmt::format("dtsim: command line: {}\n", dtsim::one_line(e.what())));
    return 2;
  }

  // Standard output that cannot be written (a full disk, a closed descriptor) is refused as a
  // file that cannot be written is (atomic_file.cpp): one line, exit 2, whichever way the command
  // printed (fmt::print throws, std::cout and stdio only set their error state).
  const auto stdout_failed = [] {
    const int err = errno;
    dtsim::remove_created_outputs();  // the command failed: what it wrote for it goes too
    say(fmt::format("dtsim: standard output: writing failed{}\n", err != 0 ? std::string(": ") + std::strerror(err) : ""));
    return 2;
  };
  int rc = 0;
  try {
    rc = action ? action() : 0;
  } catch (const dtsim::InputError& e) {
    say(fmt::format("dtsim: {}\n", e.what()));
    return 2;
  } catch (const std::system_error& e) {
    if (std::ferror(stdout))
      return stdout_failed();
    say(fmt::format("dtsim: internal error: {}\n", dtsim::one_line(e.what())));
    return 1;
  } catch (const std::exception& e) {
    say(fmt::format("dtsim: internal error: {}\n", dtsim::one_line(e.what())));
    return 1;
  }
  errno = 0;
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout))
    return stdout_failed();
  return rc;
}
