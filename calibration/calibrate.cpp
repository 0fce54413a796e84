#include "calibration/calibrate.hpp"
#include "sim/util/text_file.hpp"

#include "calibration/bandwidth_fit.hpp"
#include "calibration/calibration_inputs.hpp"
#include "calibration/compute_profile.hpp"
#include "calibration/host_load_curve.hpp"
#include "calibration/nccl_fit.hpp"
#include "sim/model/model.hpp"
#include "sim/topology/topology_builder.hpp"
#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace dtsim::calibration {

namespace {

std::string read_text(const std::string& path)
{
  return read_input_file(path, "a measurement log");
}

std::string pct(double v) { return std::isnan(v) ? "n/a" : fmt::format("{:.1f}%", 100 * v); }

void fit_links(const std::vector<std::string>& paths, Topology& topology, CalibrateOutcome& out)
{
  std::vector<BandwidthMeasurements> runs;
  for (const auto& p : paths) {
    auto r = load_bandwidth_log(p);
    runs.insert(runs.end(), r.begin(), r.end());
  }
  const BandwidthMeasurements m = merge_runs(runs);
  FitOptions options;
  const PairClasses classes = pair_classes_from_topology(topology);
  const std::size_t measured = std::max(m.unidir_p2p_GBps.size(), m.unidir_nop2p_GBps.size());
  nlohmann::json fit = fit_bandwidth(m, options);  // classes from the measurement (topo matrix, clustering)
  if (measured == classes.size() && measured > 1) {
    // The topology's classes give per-lane figures, but its GPU numbering may differ from the
    // measured machine's: keep whichever classification explains the cells better.
    options.classes = classes;
    nlohmann::json by_topology = fit_bandwidth(m, options);
    const auto rms = [](const nlohmann::json& f) { return f.at("fit").at("rms_relative_error").get<double>(); };
    if (rms(by_topology) <= rms(fit) + 0.02)
      fit = std::move(by_topology);
    else
      out.report.push_back(fmt::format("bandwidth: {}'s pair classes fit the cells worse (rms {}) than the "
                                       "measurement's own ({}); kept the latter",
                                       topology.name, pct(rms(by_topology)), pct(rms(fit))));
  }
  nlohmann::json fragment = links_fragment(fit);
  // A log of zeros fits zero rates: the logs are what is wrong, not the calibration file.
  for (const auto& [link, figures] : fragment.at("links").items())
    for (const auto& [key, value] : figures.items())
      if (key.find("GBps") != std::string::npos && value.is_number() && !(value.get<double>() > 0))
        throw InputError(fmt::format("{}", fmt::join(paths, ", ")), "",
                         fmt::format("the measured bandwidths give the {} link a rate of {} GB/s (expected "
                                     "positive GB/s in the log's cells)", link, value.get<double>()));
  fragment["fit"]["bandwidth"] = fit.at("fit");
  out.file.merge(fragment);
  apply_calibration(topology, out.file);
  std::string classes_line;
  for (const auto& [cls, q] : fit.at("fit").at("per_class").items())
    classes_line += fmt::format(", {} {} pairs rms {}", cls, q.at("points").get<int>(),
                                pct(q.at("rms_relative_error").get<double>()));
  out.report.push_back(fmt::format("bandwidth ({}; {}): classes from {}{}; links: {}", fmt::join(paths, ", "),
                                   m.format, fit.at("fit").at("classification").get<std::string>(), classes_line,
                                   fragment.at("links").dump()));
  if (measured > 1 && measured != classes.size())
    out.report.push_back(fmt::format("bandwidth: {} GPUs measured, {} per node in {}: pair classes from the "
                                     "measurement itself", measured, classes.size(), topology.name));
}

void fit_nccl(const std::vector<std::string>& paths, const Topology& topology, const CalibrateRequest& request,
              CalibrateOutcome& out)
{
  std::vector<NcclTestsLog> logs;
  for (const auto& p : paths)
    for (auto& log : split_nccl_tests_tables(read_text(p), p)) {
      log.nccl_env.insert(log.nccl_env.end(), request.nccl_overrides.begin(), request.nccl_overrides.end());
      if (const std::string env = describe_nccl_env(log.nccl_env); !env.empty())
        out.report.push_back(fmt::format("nccl {}: run under {}", log.path, env));
      logs.push_back(std::move(log));
    }
  if (logs.empty())
    return;
  const std::uint64_t max_bytes = request.max_bytes;
  const auto fit = fit_nccl_params(topology, logs, NcclParams::defaults(topology.gpu.compute_capability), max_bytes);
  out.file.merge(fit.fragment);
  out.report.push_back(fmt::format("nccl: launch_overhead_us {:.2f}, hop_latency_scale {:.3f}; efficiency: {}{}",
                                   fit.params.launch_overhead_us, fit.params.hop_latency_scale, fit.efficiency_fitted,
                                   max_bytes ? fmt::format(" (rows <= {} B)", max_bytes) : ""));
  if (!fit.efficiency_kept.empty())
    out.report.push_back(fmt::format("nccl: kept at preset (the logs constrain them too little to fit): {}",
                                     fit.efficiency_kept));
  for (std::size_t i = 0; i < logs.size(); ++i)
    out.report.push_back(fmt::format("nccl {}: median |busbw error| >= 1 MiB {} -> {}, < 1 MiB {} -> {}", logs[i].path,
                                     pct(fit.before[i].median_abs_error_large), pct(fit.after[i].median_abs_error_large),
                                     pct(fit.before[i].median_abs_error_small), pct(fit.after[i].median_abs_error_small)));
}

void fit_compute(const std::vector<std::string>& paths, const Topology& topology, CalibrateOutcome& out)
{
  const ComputeProfile profile = load_compute_profile(paths);
  PeakFlops peak;
  for (auto [name, p] : {std::pair{"fp32", Precision::Fp32}, std::pair{"tf32", Precision::Tf32},
                         std::pair{"fp16", Precision::Fp16}, std::pair{"bf16", Precision::Bf16}})
    peak[name] = topology.gpu.peak_flops(p);
  std::optional<std::vector<std::string>> names;
  if (!profile.model.empty()) {
    const Model model = load_model(profile.model, profile.file, "/model/name");
    names.emplace();
    for (const auto& l : model.layers)
      names->push_back(l.name);
  }
  const nlohmann::json fragment = compute_fragment(profile, peak, names);
  out.file.merge({{"compute", fragment}});
  std::string line = fmt::format("compute ({}): GPU {}", fmt::join(paths, ", "), profile.gpu);
  if (fragment.contains("gemm_tflops"))
    line += fmt::format(", best GEMM TFLOP/s {}", fragment.at("gemm_tflops").dump());
  if (fragment.contains("efficiency"))
    line += fmt::format(" = {} of {} peak", fragment.at("efficiency").dump(), topology.gpu.name);
  if (fragment.contains("model"))
    line += fmt::format("; model {} batch {}: {} layers timed, {} missing, fwd {:.4g} s bwd {:.4g} s", profile.model,
                        profile.batch, profile.layers.size(),
                        fragment.contains("missing_layers") ? fragment.at("missing_layers").size() : 0,
                        fragment.at("model").at("fwd_s").get<double>(), fragment.at("model").at("bwd_s").get<double>());
  out.report.push_back(line);
  if (profile.gpu.find(topology.gpu.name) == std::string::npos)
    out.report.push_back(fmt::format("compute: measured on \"{}\", the topology's GPU is {}: its times apply as measured",
                                     profile.gpu, topology.gpu.name));
}

void fit_host(const std::vector<std::string>& paths, const Topology& topology, CalibrateOutcome& out)
{
  // One machine's curve: a second would replace the first without a word.
  if (paths.size() > 1)
    throw InputError(paths[1], "", fmt::format("expected one host load curve per calibration ({} gives one already)", paths[0]));
  for (const auto& path : paths) {
    const nlohmann::json doc = parse_json_text(read_text(path), path);
    const nlohmann::json fragment = host_load_curve_fragment(doc, path);
    out.file.merge(fragment);
    const auto& h = fragment.at("host");
    std::string points;
    for (const auto& p : h.at("load_curve"))
      points += fmt::format("{}{:.0f}% x{:.3f}", points.empty() ? "" : ", ", 100 * p.at("busy_fraction").get<double>(),
                            p.at("cost_ratio").get<double>());
    out.report.push_back(fmt::format("host ({}): load curve of {} CPUs ({}), cost per sample by cores busy: {}; one "
                                     "process {:.2f} ms per sample", path, h.at("cpus").get<double>(),
                                     h.at("series").get<std::string>(), points,
                                     h.at("one_process_ms_per_sample").get<double>()));
    if (topology.host.cores > 0 && topology.host.cores * topology.host.threads_per_core != h.at("cpus").get<double>())
      out.report.push_back(fmt::format("host: measured on {} CPUs, {} has {} cores x {} threads: the curve applies by "
                                       "the fraction of the cores busy", h.at("cpus").get<double>(), topology.name,
                                       topology.host.cores, topology.host.threads_per_core));
  }
}

}  // namespace

CalibrateOutcome calibrate(const CalibrateRequest& request)
{
  std::vector<std::string> nccl, bandwidth, compute, host;
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& path : request.inputs) {
    const InputFormat f = detect_input_format(read_text(path), path);
    (f == InputFormat::NcclTests   ? nccl
     : f == InputFormat::Bandwidth ? bandwidth
     : f == InputFormat::HostCosts ? host
                                   : compute)
        .push_back(path);
    sources.push_back({{"file", path}, {"format", to_string(f)}});
  }
  Topology topology = load_topology(request.topology, request.nodes);
  CalibrateOutcome out;
  out.file.json["topology"] = request.topology;
  out.file.json["nodes"] = topology.nodes;
  if (!bandwidth.empty())
    fit_links(bandwidth, topology, out);
  if (!nccl.empty())
    fit_nccl(nccl, topology, request, out);
  if (!compute.empty())
    fit_compute(compute, topology, out);
  if (!host.empty())
    fit_host(host, topology, out);
  nlohmann::json not_measured = out.file.json.value("not_measured", nlohmann::json::array());
  if (bandwidth.empty())
    not_measured.push_back("links: no bandwidth log given (the topology's nominal link rates stay)");
  if (nccl.empty())
    not_measured.push_back("nccl: no nccl-tests log given (NCCL defaults for the GPU stay)");
  if (compute.empty())
    not_measured.push_back("compute: no compute profile given");
  out.file.json["not_measured"] = not_measured;
  out.file.json["sources"] = sources;  // after the fragments (the NCCL fit names its logs there too)
  CalibrationFile::check(out.file.json, "calibration being written");
  return out;
}

}  // namespace dtsim::calibration
