// `dtsim report`, `run --html`, `sweep --html`: one self-contained HTML page (inline SVG and CSS,
// one small inline script that only checks the charts were drawn; nothing is fetched) with the
// iteration timeline, the iteration breakdown, link utilisation, the scaling curve, swept fields,
// compared strategies and the training-time arithmetic.
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/report/results.hpp"
#include "sim/report/timeline.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace dtsim {

/// One simulated run with everything the timeline needs.
struct RunView {
  const Topology* topology = nullptr;
  const Plan* plan = nullptr;
  const std::vector<Span>* spans = nullptr;
  const RunResult* result = nullptr;
};

/// One point of a sweep: the values of the varied fields and the run's `--json` figures.
struct SweepPoint {
  nlohmann::json values;  ///< {"cluster.nic.gbps": 100, ...}
  nlohmann::json result;  ///< json_report(...)
};

struct HtmlReportInput {
  std::string title;
  RunView run;                        ///< the detailed run (optional: result == nullptr)
  TimelineOptions timeline;
  std::vector<nlohmann::json> scaling;  ///< json_report of the same scenario at several GPU counts
  std::vector<std::string> varied;    ///< sweep: the varied fields, in command-line order
  std::vector<SweepPoint> sweep;
  std::vector<nlohmann::json> compared;  ///< json_report of the same model and machine under several strategies
  std::vector<std::string> command;   ///< the command line that made the page (shown)
};

std::string html_report(const HtmlReportInput& input);

}  // namespace dtsim
