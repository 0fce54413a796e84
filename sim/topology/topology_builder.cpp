// Resolves a cluster description (preset name, .json path, or inline object with "base") into
// layers, validates them and assembles the graph.
#include "sim/topology/topology_builder.hpp"
#include "sim/util/did_you_mean.hpp"

#include "sim/topology/topology_assembly.hpp"
#include "sim/topology/topology_check.hpp"
#include "sim/topology/topology_spec.hpp"
#include "sim/util/data_paths.hpp"
#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <memory>

namespace dtsim {

namespace {

constexpr int kMaxBaseDepth = 8;

bool ends_with_json(const std::string& s)
{
  return s.size() >= 5 && s.compare(s.size() - 5, 5, ".json") == 0;
}

/// A string value: a preset name or a .json path (tried as given, then beside the file naming it).
std::string resolve_path(const std::string& ref, const std::string& file, const std::string& pointer, std::string* name)
{
  namespace fs = std::filesystem;
  if (ends_with_json(ref)) {
    fs::path path(ref);
    if (!fs::exists(path) && path.is_relative() && !file.empty() && fs::exists(fs::path(file).parent_path() / path))
      path = fs::path(file).parent_path() / path;
    if (!pointer.empty())  // named inside a scenario or topology file (a command line's names itself)
      require_referenced_file(path.string(), ref, file, pointer);
    *name = fs::path(ref).stem().string();
    return path.string();
  }
  const auto presets = topology_preset_names();
  std::error_code ec;
  if (std::find(presets.begin(), presets.end(), ref) == presets.end() && fs::is_directory(ref, ec))
    throw InputError(file, pointer, fmt::format("\"{}\" is a directory (expected a topology preset name or a path ending "
                                                "in .json)", ref));
  if (std::find(presets.begin(), presets.end(), ref) == presets.end())
    throw InputError(file, pointer,
                     fmt::format("unknown topology preset \"{}\"{} (expected one of {}, or a path ending in .json)", ref,
                                 did_you_mean(ref, presets), fmt::join(presets, ", ")));
  *name = ref;
  return data_file("topologies", ref);
}

void add_layers(LayeredJson& layers, const JsonReader& value, int depth, std::string* name);

void add_file_layers(LayeredJson& layers, const std::string& ref, const std::string& file, const std::string& pointer,
                     int depth, std::string* name)
{
  if (depth > kMaxBaseDepth)
    throw InputError(file, pointer, fmt::format("\"base\" chain deeper than {} (a preset that names itself?)", kMaxBaseDepth));
  std::string file_name;
  const std::string path = resolve_path(ref, file, pointer, &file_name);
  if (name->empty())
    *name = file_name;
  auto doc = std::make_shared<const nlohmann::json>(load_json_file(path));
  JsonReader root(*doc, path, "");
  if (!root.is_object())
    root.fail(fmt::format("expected a topology object, got {}", describe_json(*doc)));
  layers.add_layer(root, doc);
  if (auto base = root.find("base"))
    add_file_layers(layers, base->as_string(), path, base->pointer(), depth + 1, name);
}

void add_layers(LayeredJson& layers, const JsonReader& value, int depth, std::string* name)
{
  if (value.json().is_string()) {
    add_file_layers(layers, value.as_string(), value.file(), value.pointer(), depth, name);
    return;
  }
  if (!value.is_object())
    value.fail(fmt::format("expected a topology preset name, a path ending in .json, or an object, got {}",
                           describe_json(value.json())));
  layers.add_layer(value);
  if (auto own = value.find("name"))
    *name = own->as_string();
  if (auto base = value.find("base")) {
    std::string base_name;
    add_file_layers(layers, base->as_string(), value.file(), base->pointer(), depth + 1, &base_name);
    if (name->empty())
      *name = base_name;
  }
}

}  // namespace

std::vector<std::string> topology_preset_names()
{
  return data_names("topologies");
}

Topology build_topology(const JsonReader& cluster, std::optional<int> nodes)
{
  LayeredJson layers;
  std::string name;
  add_layers(layers, cluster, 0, &name);
  if (name.empty())
    name = "inline";
  const TopologySpec spec = read_topology_spec(layers, name, nodes);

  Topology t;
  t.name = spec.name;
  if (const auto c = layers.find({"calibration"}))
    t.calibration = Topology::FileReference{c->as_string(), c->file(), c->pointer()};
  t.gpu = spec.gpu;
  t.nodes = spec.nodes;
  t.gpus_per_node = spec.gpus_per_node;
  t.gpu_forwarding = spec.gpu_forwarding;
  t.pcie_p2p = spec.p2p;
  t.host.cpu = spec.host_cpu;
  t.host.cores = spec.host_cores;
  t.host.threads_per_core = spec.host_threads_per_core;
  t.host.sockets = spec.cpu_sockets;
  t.host.memory_bytes_per_s_per_socket = spec.host_memory_bandwidth;
  t.host.memory_bytes = spec.host_memory_bytes;
  t.host.turbo_max_ghz = spec.host_turbo_max_ghz;
  t.host.turbo_all_core_ghz = spec.host_turbo_all_core_ghz;
  for (int n = 0; n < spec.nodes; ++n)
    add_node(t, spec, n);
  add_fabric(t, spec);

  const auto problems = topology_problems(t);
  if (!problems.empty()) {
    const JsonReader& top = layers.top();
    throw InputError(top.file(), top.pointer(), problems.front());
  }
  return t;
}

Topology load_topology(const std::string& name_or_file, std::optional<int> nodes, const std::string& option)
{
  const nlohmann::json value = name_or_file;
  return build_topology(JsonReader(value, option, ""), nodes);
}

}  // namespace dtsim
