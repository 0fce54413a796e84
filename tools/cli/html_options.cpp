#include "tools/cli/html_options.hpp"

#include "sim/scenario/strategy_members.hpp"
#include "sim/topology/topology_builder.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"
#include "sim/util/number_text.hpp"
#include "sim/util/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <optional>

namespace dtsim::cli {

namespace {
std::vector<std::string>& stored_command_line()
{
  static std::vector<std::string> args;
  return args;
}
}  // namespace

void add_timeline_options(CLI::App* cmd, TimelineArgs& args, CLI::Option* page)
{
  auto* gpus = cmd->add_option("--gpus-shown", args.gpus_shown,
                               "GPU ranks drawn on the timeline: 0-7 (the default; a pipeline's first GPU per stage), "
                               "0,8,16,24, or all");
  auto* links = cmd->add_option("--links-shown", args.links_shown, "busiest link directions drawn on the timeline (default 16)")
                    ->check(CLI::Range(0, 4096));
  if (page) {  // without the page they would be ignored
    gpus->needs(page);
    links->needs(page);
  }
}

TimelineOptions timeline_options(const TimelineArgs& args, int gpus)
{
  TimelineOptions o;
  o.max_links = args.links_shown;
  if (args.gpus_shown.empty())
    return o;
  const auto fail = [&](const std::string& why) {
    throw InputError("--gpus-shown", "", fmt::format("expected ranks such as 0-7 or 0,8,16 below {}, or all; {}", gpus, why));
  };
  if (args.gpus_shown == "all") {
    for (int r = 0; r < gpus; ++r)
      o.gpu_ranks.push_back(r);
    return o;
  }
  for (const auto& part : split_trimmed(args.gpus_shown, ',')) {
    const auto dash = part.find('-');
    const auto lo = parse_int(part.substr(0, dash), 0, gpus - 1);
    const auto hi = dash == std::string::npos ? lo : parse_int(part.substr(dash + 1), 0, gpus - 1);
    if (!lo || !hi || *hi < *lo)
      fail(fmt::format("got '{}'", part));
    for (auto r = *lo; r <= *hi; ++r)
      o.gpu_ranks.push_back(static_cast<int>(r));
  }
  return o;
}

namespace {

/// The names --strategies takes beyond the plain kinds: DeepSpeed's stages, FSDP's hybrid sharding,
/// and the offloads (FSDP's CPU offload, ZeRO-3 with offload_optimizer on the CPU).
const std::vector<std::string>& strategy_names()
{
  static const std::vector<std::string> names = {"single", "dp",    "ddp",   "pipeline", "hybrid",       "fsdp",
                                                 "hsdp",   "zero1", "zero2", "zero3",    "fsdp-offload", "zero3-offload"};
  return names;
}

}  // namespace

std::vector<std::string> strategy_list(const std::string& text, const std::string& flag)
{
  const auto& kinds = strategy_names();
  std::vector<std::string> out;
  for (const auto& kind : split_trimmed(text, ',')) {
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
      throw InputError(flag, "", fmt::format("expected strategies among {} separated by commas, got '{}'",
                                             fmt::join(kinds, ", "), kind));
    out.push_back(kind);
  }
  return out;
}

nlohmann::json strategy_object(const std::string& name)
{
  if (name == "hsdp")
    return {{"kind", "fsdp"}, {"sharding", "hybrid_shard"}};
  if (name == "fsdp-offload")  // cpu_offload's defaults, an object a --set can go into
    return {{"kind", "fsdp"}, {"cpu_offload", nlohmann::json::object()}};
  if (name == "zero3-offload")
    return {{"kind", "zero"}, {"stage", 3}, {"offload_optimizer", {{"device", "cpu"}}}};
  if (name.rfind("zero", 0) == 0 && name.size() == 5)
    return {{"kind", "zero"}, {"stage", name[4] - '0'}};
  return {{"kind", name}};
}

std::string own_strategy_name(const nlohmann::json& strategy)
{
  if (!strategy.is_object() || !strategy.contains("kind") || !strategy.at("kind").is_string())
    return "";
  const std::string kind = strategy.at("kind").get<std::string>();
  const auto truthy = [&](const char* member) {
    if (!strategy.contains(member))
      return false;
    const auto& v = strategy.at(member);
    return v.is_boolean() ? v.get<bool>() : v.is_object();
  };
  if (kind == "fsdp") {
    const auto sharding = strategy.value("sharding", nlohmann::json());
    const bool hybrid = sharding == "hybrid_shard" || sharding == "_hybrid_shard_zero2";
    if (hybrid && truthy("cpu_offload"))
      return "";  // no name is both
    return hybrid ? "hsdp" : truthy("cpu_offload") ? "fsdp-offload" : "fsdp";
  }
  if (kind == "zero") {
    const auto stage = strategy.value("stage", nlohmann::json());
    if (!stage.is_number_integer() || stage.get<int>() < 1 || stage.get<int>() > 3)
      return "";
    if (truthy("offload_optimizer") || truthy("offload_param"))
      return stage == 3 && !truthy("offload_param") ? "zero3-offload" : "";
    return fmt::format("zero{}", stage.get<int>());
  }
  return kind;
}

nlohmann::json scenario_strategy(const std::string& scenario, const std::vector<Override>& overrides)
{
  std::error_code ec;
  if (!std::filesystem::is_regular_file(scenario, ec))
    return nullptr;  // a pipe is read once, by the runs
  try {
    nlohmann::json doc = load_json_file(scenario);
    std::vector<Override> whole;  // --set strategy={...} replaces it; strategy.MEMBER goes per name
    for (const auto& o : overrides)
      if (o.path.rfind("strategy.", 0) != 0)
        whole.push_back(o);
    apply_overrides(doc, whole);
    return doc.is_object() && doc.contains("strategy") && doc.at("strategy").is_object() ? doc.at("strategy") : nullptr;
  } catch (const InputError&) {
    return nullptr;  // the runs say what is wrong
  }
}

nlohmann::json compared_strategy(const std::string& name, const nlohmann::json& own)
{
  const nlohmann::json preset = strategy_object(name);
  if (!own.is_object() || own.value("kind", nlohmann::json()) != preset.at("kind"))
    return preset;
  if (own_strategy_name(own) == name)
    return own;  // the scenario's own strategy, as it gives it
  // Another name of the scenario's kind: its settings (mixed precision, buckets, prefetch) carry, less
  // what makes the other names what they are; then the name's own members.
  nlohmann::json merged = own;
  if (preset.at("kind") == "fsdp") {
    const auto sharding = merged.value("sharding", nlohmann::json());
    if (sharding == "hybrid_shard" || sharding == "_hybrid_shard_zero2") {
      merged.erase("sharding");
      merged.erase("shard_group_size");
    }
    merged.erase("cpu_offload");
  } else if (preset.at("kind") == "zero") {
    merged.erase("offload_optimizer");
    merged.erase("offload_param");
    if (preset.value("stage", 0) != 3)
      for (const auto& m : zero_stage3_members())
        merged.erase(m);
  }
  for (const auto& [key, value] : preset.items())
    merged[key] = value;
  return merged;
}

namespace {

/// "strategy.M..." -> "M"; "" for any other path.
std::string strategy_member(const Override& o)
{
  const std::string prefix = "strategy.";
  if (o.path.rfind(prefix, 0) != 0)
    return {};
  const std::string rest = o.path.substr(prefix.size());
  return rest.substr(0, rest.find('.'));
}

/// Whether strategy `name` (strategy_list's), compared with `names`, takes a --set of `member`
/// (`below`: of a path inside it, strategy.MEMBER.X): its kind takes the member and no compared name
/// sets it (zero1 and zero2 none of stage 3's; fsdp-offload's cpu_offload and zero3-offload's
/// offload_optimizer are theirs alone), or its own name sets it to an object the path goes into.
bool takes_member(const std::string& name, const std::string& member, bool below, const std::vector<std::string>& names)
{
  const nlohmann::json preset = strategy_object(name);
  if (preset.contains(member))
    return below && preset.at(member).is_object();
  const auto& members = strategy_members(preset.at("kind").get<std::string>());
  const auto& stage3 = zero_stage3_members();
  if (preset.contains("stage") && preset.at("stage") != 3 && std::find(stage3.begin(), stage3.end(), member) != stage3.end())
    return false;
  if (std::any_of(names.begin(), names.end(), [&](const std::string& n) { return strategy_object(n).contains(member); }))
    return false;
  return std::find(members.begin(), members.end(), member) != members.end();
}

}  // namespace

std::vector<Override> strategy_overrides(const std::vector<Override>& overrides, const std::string& name,
                                         const std::vector<std::string>& names, const nlohmann::json& own)
{
  std::vector<Override> out, members;
  for (const auto& o : overrides)
    (strategy_member(o).empty() ? out : members).push_back(o);
  out.push_back({"strategy", compared_strategy(name, own).dump()});
  for (const auto& o : members) {
    const std::string member = strategy_member(o);
    const bool below = o.path.size() > std::string("strategy.").size() + member.size();
    const auto takes = [&](const std::string& n) { return takes_member(n, member, below, names); };
    if (std::none_of(names.begin(), names.end(), takes))
      throw InputError(o.origin, "", fmt::format("strategy.{}: expected a member that one of the strategies compared ({}) "
                                                 "takes and their names do not set",
                                                 member, fmt::join(names, ", ")));
    if (takes(name))
      out.push_back(o);
  }
  return out;
}

std::vector<Override> with_gpus(const std::string& scenario, std::vector<Override> overrides, int gpus)
{
  const bool nodes_set = std::any_of(overrides.begin(), overrides.end(), [](const Override& o) {
    return o.path == "cluster" || o.path == "cluster.nodes";
  });
  if (nodes_set) {
    overrides.push_back({"gpus", std::to_string(gpus)});
    return overrides;
  }
  // The cluster as the point has it: the scenario read with the point's own GPU count, so that what
  // depends on it (the batch over the data-parallel replicas, the parallel degrees) is checked against
  // that count, not the scenario's. The count may not fit the cluster's nodes yet (read, not planned).
  // A point that does not read while the scenario without the count does is refused by its own run
  // (report leaves it out); when neither reads, the point's error is the one.
  std::vector<Override> point = overrides;
  point.push_back({"gpus", std::to_string(gpus)});
  std::optional<Scenario> s;
  try {
    s = load_scenario(scenario, point);
  } catch (const InputError& point_error) {
    try {
      s = load_scenario(scenario, overrides);
    } catch (const InputError&) {
      throw point_error;
    }
  }
  const int per_node = build_topology(s->cluster()).gpus_per_node;
  overrides = std::move(point);
  if (per_node <= 0)
    return overrides;
  if (s->doc.at("cluster").is_string())
    overrides.push_back({"cluster", nlohmann::json{{"base", s->doc.at("cluster")}}.dump()});
  overrides.push_back({"cluster.nodes", std::to_string((gpus + per_node - 1) / per_node)});
  return overrides;
}

void set_command_line(int argc, char** argv)
{
  stored_command_line().assign(argv, argv + argc);
  if (!stored_command_line().empty())
    stored_command_line().front() = "dtsim";
}

const std::vector<std::string>& command_line()
{
  return stored_command_line();
}

}  // namespace dtsim::cli
