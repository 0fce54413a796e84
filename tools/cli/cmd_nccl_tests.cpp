#include "tools/cli/command.hpp"

#include <fmt/format.h>

namespace dtsim::cli {

void add_nccl_tests_command(CLI::App& app, Action& action)
{
  auto* cmd = app.add_subcommand("nccl-tests", "(not yet implemented)");
  cmd->allow_extras();
  cmd->callback([&action] {
    action = [] {
      fmt::print(stderr, "dtsim: 'nccl-tests' is not implemented yet\n");
      return 1;
    };
  });
}

}  // namespace dtsim::cli
