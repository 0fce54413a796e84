// What `report`, `run --html` and `sweep --html` share: which GPUs the timeline draws, the
// command line shown on the page, and `cluster.nodes` following a GPU count.
#pragma once

#include "sim/report/timeline.hpp"
#include "sim/scenario/scenario.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace dtsim::cli {

struct TimelineArgs {
  std::string gpus_shown;  ///< "0-7", "0,8,16,24", "all"
  int links_shown = 16;
};

void add_timeline_options(CLI::App* cmd, TimelineArgs& args, CLI::Option* page = nullptr);

/// Throws InputError naming --gpus-shown when the list is malformed.
TimelineOptions timeline_options(const TimelineArgs& args, int gpus);

/// The overrides that run `scenario` on `gpus` GPUs, with cluster.nodes following (enough nodes for
/// them) unless `overrides` set cluster.nodes themselves.
std::vector<Override> with_gpus(const std::string& scenario, std::vector<Override> overrides, int gpus);

/// The strategy kinds of a comma-separated list ("dp,ddp,pipeline"); InputError naming `flag` for an
/// empty piece or a kind the scenario format does not have, before any point runs.
std::vector<std::string> strategy_list(const std::string& text, const std::string& flag);
/// The scenario's strategy object for one name of strategy_list: the kind itself, or "hsdp" (fsdp
/// with hybrid_shard), "zero1" .. "zero3" (zero with that stage), "fsdp-offload" (fsdp with
/// cpu_offload's defaults) and "zero3-offload" (stage 3 with offload_optimizer on the CPU).
nlohmann::json strategy_object(const std::string& name);
/// The overrides of one strategy of --strategies: `overrides` with the strategy's object, then each
/// `--set strategy.MEMBER=...` of them whose member its kind takes (one of another kind is left out,
/// and a member the name sets, kind, zero's stage or hsdp's sharding, stays as the name says; a member
/// an offload name sets is that name's alone, and a path inside it, cpu_offload.omp_num_threads,
/// goes into its object);
/// given before the object, it would be replaced by it. InputError naming the option when no
/// strategy of `names` takes a member set. `own`: the scenario's strategy object (scenario_strategy),
/// which compared_strategy starts from.
std::vector<Override> strategy_overrides(const std::vector<Override>& overrides, const std::string& name,
                                         const std::vector<std::string>& names, const nlohmann::json& own = nullptr);
/// The name of strategy_list a scenario's strategy object answers to: "hsdp" for fsdp with hybrid
/// sharding, "fsdp-offload" with cpu_offload, "zero1" .. "zero3", "zero3-offload" (offload_optimizer
/// alone), else its kind; "" where no name does (zero stage 2 with an offload, hybrid sharding offloaded).
std::string own_strategy_name(const nlohmann::json& strategy);
/// The strategy object of the scenario file with `overrides` (those of strategy members aside); null for
/// a pipe (read once, by the runs) or a file that does not read (the runs say why).
nlohmann::json scenario_strategy(const std::string& scenario, const std::vector<Override>& overrides);
/// The strategy object one compared name runs: the scenario's own (`own`) where the name is its own;
/// for another name of its kind, its settings less what makes the other names (fsdp: hybrid sharding,
/// cpu_offload; zero: the offloads, stage 3's members below stage 3) with the name's preset over them
/// (hsdp on an FSDP scenario keeps its mixed precision); else the name's preset (strategy_object).
nlohmann::json compared_strategy(const std::string& name, const nlohmann::json& own);

/// argv as main() received it (shown at the foot of the HTML page).
void set_command_line(int argc, char** argv);
const std::vector<std::string>& command_line();

}  // namespace dtsim::cli
