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

/// A name --strategies takes and the members it sets, in one table for strategy_object (the object the
/// name runs), compared_strategy (another name of the scenario's kind runs the scenario's settings less
/// `not_carried` and `not_taken`, then `sets`) and takes_member (a --set of a member reaches the names
/// that can have it and that no compared name sets).
struct NamedStrategy {
  std::string name;
  nlohmann::json sets;                   ///< kind and the members that make it this name (strategy_object)
  std::vector<std::string> not_carried;  ///< the scenario's members that make another name of its kind, or none
                                         ///< ("sharding": only hybrid sharding, with its shard_group_size)
  std::vector<std::string> not_taken;    ///< members of its kind no strategy of this name has: not carried,
                                         ///< and a --set of one does not reach it
};

/// The plain kinds, then the names beyond them: DeepSpeed's stages, FSDP's hybrid sharding, and the
/// offloads (FSDP's CPU offload, ZeRO-3 with offload_optimizer on the CPU).
const std::vector<NamedStrategy>& named_strategies()
{
  // hsdp's hybrid sharding and fsdp-offload's cpu_offload; zero3-offload's offload_optimizer, and
  // offload_param, which no name has.
  static const std::vector<std::string> fsdp = {"sharding", "cpu_offload"}, zero = {"offload_optimizer", "offload_param"};
  static const std::vector<NamedStrategy> table = {
      {"single", {{"kind", "single"}}, {}, {}},
      {"dp", {{"kind", "dp"}}, {}, {}},
      {"ddp", {{"kind", "ddp"}}, {}, {}},
      {"pipeline", {{"kind", "pipeline"}}, {}, {}},
      {"hybrid", {{"kind", "hybrid"}}, {}, {}},
      {"fsdp", {{"kind", "fsdp"}}, fsdp, {}},
      {"hsdp", {{"kind", "fsdp"}, {"sharding", "hybrid_shard"}}, fsdp, {}},
      {"zero1", {{"kind", "zero"}, {"stage", 1}}, zero, zero_stage3_members()},  // stage 3's members only at stage 3
      {"zero2", {{"kind", "zero"}, {"stage", 2}}, zero, zero_stage3_members()},
      {"zero3", {{"kind", "zero"}, {"stage", 3}}, zero, {}},
      // cpu_offload's defaults, an object a --set can go into
      {"fsdp-offload", {{"kind", "fsdp"}, {"cpu_offload", nlohmann::json::object()}}, fsdp, {}},
      {"zero3-offload", {{"kind", "zero"}, {"stage", 3}, {"offload_optimizer", {{"device", "cpu"}}}}, zero, {}}};
  return table;
}

/// The row of `name`; for a name of no row, its kind alone.
NamedStrategy named_strategy(const std::string& name)
{
  const auto& table = named_strategies();
  const auto it = std::find_if(table.begin(), table.end(), [&](const NamedStrategy& s) { return s.name == name; });
  return it != table.end() ? *it : NamedStrategy{name, {{"kind", name}}, {}, {}};
}

bool is_hybrid_sharding(const nlohmann::json& sharding)
{
  return sharding == "hybrid_shard" || sharding == "_hybrid_shard_zero2";
}

/// Removes `member` from a strategy object; "sharding" only where it is hybrid, with its shard_group_size.
void drop_member(nlohmann::json& strategy, const std::string& member)
{
  if (member == "sharding") {
    if (!is_hybrid_sharding(strategy.value("sharding", nlohmann::json())))
      return;
    strategy.erase("shard_group_size");
  }
  strategy.erase(member);
}

}  // namespace

std::vector<std::string> strategy_list(const std::string& text, const std::string& flag)
{
  std::vector<std::string> kinds;
  for (const auto& s : named_strategies())
    kinds.push_back(s.name);
  std::vector<std::string> out;
  for (const auto& kind : split_trimmed(text, ',')) {
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
      throw InputError(flag, "", fmt::format("expected strategies among {} separated by commas, got '{}'",
                                             fmt::join(kinds, ", "), kind));
    if (std::find(out.begin(), out.end(), kind) != out.end())  // two identical rows: surely a slip
      throw InputError(flag, "", fmt::format("strategy '{}' given twice (each is compared once)", kind));
    out.push_back(kind);
  }
  return out;
}

nlohmann::json strategy_object(const std::string& name)
{
  return named_strategy(name).sets;
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
    const bool hybrid = is_hybrid_sharding(sharding);
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
  const NamedStrategy named = named_strategy(name);
  const nlohmann::json& preset = named.sets;
  if (!own.is_object() || own.value("kind", nlohmann::json()) != preset.at("kind"))
    return preset;
  if (own_strategy_name(own) == name)
    return own;  // the scenario's own strategy, as it gives it
  // Another name of the scenario's kind: its settings (mixed precision, buckets, prefetch) carry, less
  // what makes the other names what they are; then the name's own members.
  nlohmann::json merged = own;
  for (const auto& m : named.not_carried)
    drop_member(merged, m);
  for (const auto& m : named.not_taken)
    drop_member(merged, m);
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
  const NamedStrategy named = named_strategy(name);
  const nlohmann::json& preset = named.sets;
  if (preset.contains(member))
    return below && preset.at(member).is_object();
  const auto& members = strategy_members(preset.at("kind").get<std::string>());
  if (std::find(named.not_taken.begin(), named.not_taken.end(), member) != named.not_taken.end())
    return false;
  if (std::any_of(names.begin(), names.end(), [&](const std::string& n) { return named_strategy(n).sets.contains(member); }))
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
