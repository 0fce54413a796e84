// dtsim topology show|check|dot NAME|FILE [--nodes N] [--json]
#include "tools/cli/command.hpp"

#include "calibration/calibration_file.hpp"
#include "sim/topology/topology_builder.hpp"
#include "sim/topology/topology_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>

namespace dtsim::cli {

namespace {

struct TopologyArgs {
  std::string target;
  std::optional<int> nodes;
  bool json = false;
};

nlohmann::json topology_json(const Topology& t)
{
  nlohmann::json devices = nlohmann::json::array(), links = nlohmann::json::array();
  for (const auto& d : t.devices())
    devices.push_back({{"name", d.name}, {"kind", to_string(d.kind)}, {"node", d.node}});
  for (const auto& l : t.links())
    links.push_back({{"name", l.name}, {"kind", to_string(l.kind)}, {"a", t.device(l.a).name}, {"b", t.device(l.b).name},
                     {"bandwidth_GBps", l.bandwidth / 1e9}, {"latency_us", l.latency * 1e6}, {"lanes", l.lanes}});
  nlohmann::json gpus = nlohmann::json::array();
  for (const int g : t.gpus())
    gpus.push_back(t.device(g).name);
  return {{"name", t.name}, {"nodes", t.nodes}, {"gpus_per_node", t.gpus_per_node}, {"gpu", t.gpu.name},
          {"gpus", gpus}, {"devices", devices}, {"links", links}};
}

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

  auto* show = add_verb(cmd, "show", "Devices, links, injection bandwidth, path matrix, routes, bisection bandwidth", *args);
  show->add_flag("--json", args->json, "Print the devices and links as JSON");
  show->callback([&action, args] {
        action = [args] {
          const Topology t = load_topology(args->target, nodes_of(*args));
          if (args->json)
            fmt::print("{}\n", topology_json(t).dump(2));
          else
            fmt::print("{}", topology_show(t));
          return 0;
        };
      });
  auto* check = add_verb(cmd, "check", "Build and check the topology: exit 0, or 2 with the problem", *args);
  check->add_flag("--json", args->json, "Print the result as JSON (a problem still exits 2 with its line on stderr)");
  check->callback([&action, args] {
    action = [args] {
      const Topology t = load_topology(args->target, nodes_of(*args));
      (void)topology_calibration(t);  // the file's "calibration", checked as run checks it
      if (args->json) {
        fmt::print("{}\n", nlohmann::json{{"topology", args->target}, {"name", t.name}, {"ok", true}, {"nodes", t.nodes},
                                          {"gpus", t.gpus().size()}, {"devices", t.devices().size()},
                                          {"links", t.links().size()}}
                               .dump(2));
        return 0;
      }
      fmt::print("{}: ok ({} node{}, {} GPUs, {} devices, {} links)\n", args->target, t.nodes, t.nodes == 1 ? "" : "s",
                 t.gpus().size(),
                 t.devices().size(), t.links().size());
      return 0;
    };
  });
  auto* dot = add_verb(cmd, "dot", "Graphviz description of the topology graph", *args);
  dot->add_flag("--json", args->json,
                "Print the graph as JSON: the devices (nodes) and links (edges) as `show --json` has them, and the "
                "Graphviz text under \"dot\"");
  dot->callback([&action, args] {
    action = [args] {
      const Topology t = load_topology(args->target, nodes_of(*args));
      if (args->json) {
        nlohmann::json out = topology_json(t);
        out["dot"] = topology_dot(t);
        fmt::print("{}\n", out.dump(2));
        return 0;
      }
      fmt::print("{}", topology_dot(t));
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
