// The host's load curve from calibration/bench/host_costs.py's JSON ("tool": "dtsim-host-costs",
// run with --only loadcurve): k processes decode and augment JPEGs at once, beside a training
// process ("with_training") or alone ("idle"). The calibration file's "host" section keeps, per
// point, the fraction of the cores busy and the cost of a sample there over its cost with one
// process, net of the share of a CPU each runnable thread got (host_model.hpp counts that share
// itself, so the curve holds only what filling the cores costs: cache, memory, clocks).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace dtsim::calibration {

/// {"host": {"load_curve": [{"busy_fraction", "cost_ratio", "busy_threads", "processes"}...],
/// "cpus", "threads_per_core", "series", "one_process_ms_per_sample", "source"}}. InputError (exit 2)
/// naming the file and JSON pointer when the document has no usable load curve.
nlohmann::json host_load_curve_fragment(const nlohmann::json& doc, const std::string& path);

}  // namespace dtsim::calibration
