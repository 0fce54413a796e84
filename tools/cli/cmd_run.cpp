#include "tools/cli/command.hpp"

#include <fmt/format.h>

namespace dtsim::cli {

void add_run_command(CLI::App& app, Action& action)
{
  auto* cmd = app.add_subcommand("run", "(not yet implemented)");
  cmd->allow_extras();
  cmd->callback([&action] {
    action = [] {
      fmt::print(stderr, "dtsim: 'run' is not implemented yet\n");
      return 1;
    };
  });
}

}  // namespace dtsim::cli
