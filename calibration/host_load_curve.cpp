#include "calibration/host_load_curve.hpp"

#include "sim/strategies/host_model.hpp"
#include "sim/util/json_reader.hpp"
#include "sim/util/number_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dtsim::calibration {

nlohmann::json host_load_curve_fragment(const nlohmann::json& doc, const std::string& path)
{
  const JsonReader root(doc, path);
  if (const auto version = root.find("schema_version"); version && version->as_int() != 1)
    version->fail("expected schema_version 1 (calibration/bench/host_costs.py)");
  const auto curve = root.find("loadcurve");
  if (!curve)
    root.fail("expected a \"loadcurve\" section (run calibration/bench/host_costs.py --only loadcurve)");
  // The CPUs the processes could run on, and how many hardware threads share a core.
  const auto cpu = curve->at("cpu");
  const double cpus = static_cast<double>(cpu.at("cpu_count").as_count(1 << 16));
  double threads_per_core = 1;
  if (cpu.has("siblings") && cpu.has("cpu_cores")) {
    // /proc/cpuinfo's "siblings" (hardware threads per socket) over "cpu cores" (cores per socket).
    const auto count = [](const JsonReader& v) {
      const auto n = parse_int(v.as_string(), 1, 1 << 16);
      if (!n)
        v.fail(fmt::format("expected a count as /proc/cpuinfo writes it, got {}", v.json().dump()));
      return static_cast<double>(*n);
    };
    const double siblings = count(cpu.at("siblings"));
    const double per_socket = count(cpu.at("cpu_cores"));
    if (siblings >= per_socket)
      threads_per_core = std::round(siblings / per_socket);
  }
  const double cores = cpus / threads_per_core;
  const bool beside_training = curve->has("with_training");
  const char* series = beside_training ? "with_training" : "idle";
  const auto points = curve->at(series);
  double one = 0;  // samples/s of one process
  double one_ms = 0;
  int last_k = -1;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : points.items()) {
    const int k = static_cast<int>(p.at("processes").as_int_in(0, 1 << 16));
    if (k <= last_k)
      p.at("processes").fail(fmt::format("expected the points in increasing process counts, got {} after {}", k, last_k));
    last_k = k;
    if (const auto errors = p.find("errors"); errors && !errors->json().empty())
      errors->fail(fmt::format("the benchmark reported errors at this point ({}): expected a point measured cleanly",
                               errors->json().dump()));
    if (k == 0 || static_cast<double>(k) > cpus)
      continue;  // the trainer alone; or past the CPUs, where the queue, not the load, sets the cost
    if (p.at("ok").as_int_in(0, 1 << 16) != k)
      p.at("ok").fail(fmt::format("expected all {} processes of the point to report", k));
    const double rate = p.at("samples_per_s").as_positive() / k;  // one process's samples/s
    if (one == 0) {
      one = rate;
      one_ms = 1e3 / rate;
    }
    // The calibration file's bound on a cost ratio (calibration_file.cpp), checked here against the
    // measurement that gives it.
    if (const double ratio = one / rate; !(ratio >= 0.01 && ratio <= 100))
      p.at("samples_per_s").fail(fmt::format("expected a rate within a factor 100 of one process's ({:.4g} samples/s "
                                             "each), got {:.4g} per process",
                                             one, rate));
    const double busy = k + (beside_training ? 1.0 : 0.0);
    // The share of a core each runnable thread got (SMT siblings, a queue): host_model counts it apart.
    const double on_cores = std::min(busy, cores);
    const double siblings = std::clamp(busy - cores, 0.0, cores * (threads_per_core - 1));
    const double share = std::min(1.0, (on_cores + kSmtThreadGain * siblings) / busy);
    out.push_back({{"processes", k},
                   {"busy_threads", busy},
                   {"busy_fraction", on_cores / cores},
                   {"cost_ratio", one / rate * share}});
  }
  if (out.empty())
    points.fail("expected points with 1 to as many processes as CPUs, each with samples_per_s");
  return {{"host",
           {{"load_curve", out},
            {"cpus", cpus},
            {"threads_per_core", threads_per_core},
            {"series", series},
            {"one_process_ms_per_sample", one_ms},
            {"source", path}}}};
}

}  // namespace dtsim::calibration
