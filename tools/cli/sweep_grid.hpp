// `dtsim sweep --vary PATH=V1,V2,...`: the grid of points (every combination, the first --vary
// varying slowest), and the files of `--emit DIR` / `--collect DIR` for sweeps run elsewhere (GNU
// parallel, a Slurm job array).
#pragma once

#include "sim/scenario/scenario.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace dtsim::cli {

struct VariedField {
  std::string path;                 ///< "cluster.nic.gbps"
  std::vector<std::string> values;  ///< as typed: "100", "\"ring\"", "[1,2]"
};

/// "cluster.nic.gbps=100,200,400" (commas inside [] {} "" do not split); InputError naming --vary.
VariedField parse_vary(const std::string& text);

struct GridPoint {
  nlohmann::json values;            ///< {"cluster.nic.gbps": 100, ...} in --vary order
  std::vector<Override> overrides;  ///< --set ones, then the point's (cluster.nodes following gpus)
};

/// Every combination; `gpus` values add cluster.nodes (enough nodes) unless cluster.nodes is set
/// or varied.
std::vector<GridPoint> make_grid(const std::string& scenario, const std::vector<Override>& base,
                                 const std::vector<VariedField>& fields);

/// Writes DIR/points/NNNN.json (the scenario of each point), DIR/manifest.json, DIR/jobs.txt (one
/// `dtsim run ... --json` per line: `parallel < DIR/jobs.txt`) and DIR/slurm.sh (a job array over
/// the lines of jobs.txt). Results land in DIR/results/NNNN.json. Every point is read and planned
/// first (check_plan), as `dtsim run` would refuse it: InputError naming the point, nothing written.
/// A DIR that holds a sweep (manifest.json, points/ or results/) is refused, naming DIR.
void emit_sweep(const std::string& dir, const std::string& scenario, const std::vector<std::string>& varied,
                const std::vector<GridPoint>& points);

struct CollectedSweep {
  std::string scenario;
  std::vector<std::string> varied;
  std::vector<nlohmann::json> values, results;
};

/// Reads DIR/manifest.json and every DIR/results/NNNN.json; InputError naming the missing ones.
CollectedSweep collect_sweep(const std::string& dir);

}  // namespace dtsim::cli
