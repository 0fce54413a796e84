#include "tools/cli/command.hpp"

#include <fmt/format.h>

namespace dtsim::cli {

void add_validate_command(CLI::App& app, Action& action)
{
  auto* cmd = app.add_subcommand("validate", "(not yet implemented)");
  cmd->allow_extras();
  cmd->callback([&action] {
    action = [] {
      fmt::print(stderr, "dtsim: 'validate' is not implemented yet\n");
      return 1;
    };
  });
}

}  // namespace dtsim::cli
