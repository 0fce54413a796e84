// dtsim topology show|check|dot NAME|FILE [--nodes N]
#include "tools/cli/command.hpp"

#include "sim/topology/topology_builder.hpp"
#include "sim/topology/topology_report.hpp"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>

namespace dtsim::cli {

namespace {

struct TopologyArgs {
  std::string target;
  std::optional<int> nodes;
};

std::optional<int> nodes_of(const TopologyArgs& args)
{
  return args.nodes;
}

CLI::App* add_verb(CLI::App* parent, const std::string& name, const std::string& help, TopologyArgs& args)
{
  auto* verb = parent->add_subcommand(name, help);
  verb->add_option("topology", args.target, "preset name (see `dtsim topology list`) or path to a topology .json file")
      ->required();
  verb->add_option("--nodes", args.nodes, "number of nodes (overrides the file's \"nodes\")");
  return verb;
}

}  // namespace

void add_topology_command(CLI::App& app, Action& action)
{
  auto* cmd = app.add_subcommand("topology", "Inspect a hardware topology: show, check, dot, list");
  cmd->require_subcommand(1);
  auto args = std::make_shared<TopologyArgs>();

  add_verb(cmd, "show", "Devices, links, injection bandwidth, path matrix, routes, bisection bandwidth", *args)
      ->callback([&action, args] {
        action = [args] {
          const Topology t = load_topology(args->target, nodes_of(*args));
          fmt::print("{}", topology_show(t));
          return 0;
        };
      });
  add_verb(cmd, "check", "Build and check the topology: exit 0, or 2 with the problem", *args)->callback([&action, args] {
    action = [args] {
      const Topology t = load_topology(args->target, nodes_of(*args));
      fmt::print("{}: ok ({} node{}, {} GPUs, {} devices, {} links)\n", args->target, t.nodes, t.nodes == 1 ? "" : "s",
                 t.gpus().size(),
                 t.devices().size(), t.links().size());
      return 0;
    };
  });
  add_verb(cmd, "dot", "Graphviz description of the topology graph", *args)->callback([&action, args] {
    action = [args] {
      fmt::print("{}", topology_dot(load_topology(args->target, nodes_of(*args))));
      return 0;
    };
  });
  cmd->add_subcommand("list", "Names of the topology presets")->callback([&action] {
    action = [] {
      for (const auto& name : topology_preset_names())
        fmt::print("{}\n", name);
      return 0;
    };
  });
}

}  // namespace dtsim::cli
