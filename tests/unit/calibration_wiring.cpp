// Calibration wired end to end: calibrate() reads every input format into one file, and that file
// reaches a scenario's links, its collectives' NCCL parameters, and its compute (issue 5).
#include "calibration/calibrate.hpp"
#include "calibration/calibration_coverage.hpp"
#include "calibration/calibration_inputs.hpp"
#include "calibration/nccl_fit.hpp"
#include "sim/model/model.hpp"
#include "sim/predict/predict.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/topology/topology_builder.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace dtsim;
using namespace dtsim::calibration;

namespace {

const std::string kData = std::string(DTSIM_TESTS_DIR) + "/data/calibration/";
const std::string kProfile = kData + "compute/profile_resnet50_synthetic.json";
const std::string kV100Log = std::string(DTSIM_VALIDATION_DIR) + "/nccl/8xV100_SXM2_16GB_hybridcubemesh_allreduce.txt";

std::string temp_path(const std::string& name)
{
  const auto dir = std::filesystem::temp_directory_path() / ("dtsim-wiring-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string read(const std::string& path)
{
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json profile_totals()
{
  const auto doc = load_json_file(kProfile);
  double fwd = 0, bwd = 0;
  for (const auto& l : doc["model"]["layers"]) {
    fwd += l["fwd_s"].get<double>();
    bwd += l["bwd_s"].get<double>();
  }
  return {{"fwd", fwd}, {"bwd", bwd}, {"opt", doc["model"]["optimizer_s"].get<double>()}};
}

nlohmann::json scenario_doc(const nlohmann::json& cluster, const nlohmann::json& compute, int gpus, const char* kind,
                            const char* model = "resnet50", int batch = 64)
{
  return {{"cluster", cluster},
          {"model", model},
          {"training", {{"dataset_samples", 1281167}, {"batch_per_gpu", batch}, {"epochs", 1}, {"compute", compute}}},
          {"strategy", {{"kind", kind}}},
          {"gpus", gpus}};
}

double step_time(const nlohmann::json& doc) { return predict(parse_scenario(doc, temp_path("scenario.json"))).result.iteration_time_s; }

}  // namespace

TEST_CASE("every input format is told apart by content; an unknown one is an input error naming the file")
{
  CHECK(detect_input_format(read(kV100Log), kV100Log) == InputFormat::NcclTests);
  for (const char* f : {"bandwidth/bandwidthTest_V100SXM2_format_sample.txt",
                        "bandwidth/p2p_h2d_8xV100_SXM2_32GB_hybridcubemesh_GPUInspector.txt",
                        "bandwidth/nvbandwidth_8xRTX4090_h2d_d2h_ce_issue15.txt"})
    CHECK(detect_input_format(read(kData + f), f) == InputFormat::Bandwidth);
  CHECK(detect_input_format(read(kProfile), kProfile) == InputFormat::ComputeProfile);
  CHECK(detect_input_format(read(kData + "compute/bench_compute_sample.json"), "x") == InputFormat::ComputeProfile);
  CHECK_THROWS_WITH_AS(detect_input_format("hello\nworld\n", "notes.txt"), doctest::Contains("notes.txt"), InputError);
  CHECK_THROWS_AS(detect_input_format("{\"tool\": \"other\"}", "x.json"), InputError);
}

TEST_CASE("several nccl-tests tables in one file (dtsim-bench-nccl) are read apart, each with its own NCCL settings")
{
  const std::string log = read(kV100Log);
  const std::string forced = "# dtsim-bench-nccl (nccl-tests table format) nccl-library=21903 NCCL_ALGO=Tree NCCL_PROTO=default\n";
  const auto tables = split_nccl_tests_tables(log + log + forced + log, "multi.txt");
  REQUIRE(tables.size() == 3);
  CHECK(tables[0].rows.size() == tables[1].rows.size());
  CHECK(tables[0].rows.size() == parse_nccl_tests_log(log, "one").rows.size());
  CHECK(log_filter(tables[1]).algos.empty());
  const NcclFilter tree = log_filter(tables[2]);
  REQUIRE(tree.algos.size() == 1);
  CHECK(tree.algos[0] == NcclAlgo::Tree);
  CHECK(tree.protos.empty());  // NCCL_PROTO=default: NCCL's choice
}

TEST_CASE("calibrate fits a table run under NCCL_ALGO=Ring as Ring, and --algo overrides the log")
{
  const std::string log = std::string(DTSIM_TESTS_DIR) + "/data/nccl/issue309/h100_ib400_2n_ring_minctas24_qps2_gjaion.txt";
  const auto out = calibrate({{log}, "hgx-h100", 2, 0, {}});
  bool reported = false;
  for (const auto& line : out.report)
    reported = reported || line.find("NCCL_ALGO=Ring (applied)") != std::string::npos;
  CHECK(reported);
  // Every row is fitted, and predicted after the fit, as the Ring it was measured with (NCCL's own
  // choice on 2 x 8 H100 is Tree or NVLSTree at every size of this table).
  const auto fit = fit_nccl_params(load_topology("hgx-h100", 2), {load_nccl_tests_log(log)}, NcclParams::defaults(90));
  for (const auto& r : fit.after.at(0).rows)
    CHECK(r.algorithm.rfind("Ring/", 0) == 0);
  NcclTestsLog unforced = load_nccl_tests_log(log);
  unforced.nccl_env.clear();
  CHECK(validate_log(load_topology("hgx-h100", 2), unforced, {}).rows.back().algorithm.rfind("Ring/", 0) != 0);
  const auto as_tree = calibrate({{log}, "hgx-h100", 2, 0, nccl_env_of("tree", "")});
  bool tree = false;
  for (const auto& line : as_tree.report)
    tree = tree || line.find("NCCL_ALGO=tree (applied)") != std::string::npos;
  CHECK(tree);
  CHECK_THROWS_AS(calibrate({{log}, "hgx-h100", 2, 0, nccl_env_of("", "LL256")}), InputError);
}

TEST_CASE("a calibration from 2 nodes says which rows of a 4-node prediction rest on its network preset")
{
  // 2-node NVLSTree never loads the NICs to their limit: the fit keeps the network efficiency and
  // records it; on 4 nodes NVLSTree is bound by the NICs, and validate names the rows that are.
  const std::string issue309 = std::string(DTSIM_TESTS_DIR) + "/data/nccl/issue309/";
  const std::string two = std::string(DTSIM_VALIDATION_DIR) + "/nccl/multinode_H100_IB400_scaling_issue309_2node_default.txt";
  const auto out = calibrate({{two}, "hgx-h100", 2, 0, {}});
  REQUIRE(out.file.json["fit"]["efficiency_kept"].contains("network_efficiency"));
  bool reported = false;
  for (const auto& line : out.report)
    reported = reported || (line.find("kept at preset") != std::string::npos &&
                            line.find("network_efficiency") != std::string::npos);
  CHECK(reported);
  CollectiveOptions options;
  options.params = out.file.nccl_params(90);
  const Topology four = load_topology("hgx-h100", 4);
  const NcclTestsLog log = load_nccl_tests_log(issue309 + "h100_ib400_4n_default_gjaion.txt");
  const auto lines = rows_bound_by_presets(four, log, validate_log(four, log, options), options, out.file);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("network_efficiency") != std::string::npos);
  // The 2-node log itself is bound by what it measured: nothing to say.
  const Topology pair = load_topology("hgx-h100", 2);
  const NcclTestsLog own = load_nccl_tests_log(two);
  CHECK(rows_bound_by_presets(pair, own, validate_log(pair, own, options), options, out.file).empty());
}

TEST_CASE("calibrate: DGX-1 nccl-tests + bandwidth log -> one file; NVLink per lane, NCCL fitted on the measured links")
{
  const auto out = calibrate({{kV100Log, kData + "bandwidth/p2p_h2d_8xV100_SXM2_32GB_hybridcubemesh_GPUInspector.txt"},
                              "dgx1-v100", std::nullopt, 0, {}});
  const auto& j = out.file.json;
  // GPUInspector's V100 NVLink: NV1 pairs ~24.2 GB/s, NV2 ~48.3 GB/s (the file's matrix).
  CHECK(j["links"]["nvlink"]["bandwidth_GBps_per_lane"].get<double>() == doctest::Approx(24.2).epsilon(0.02));
  CHECK(j["links"]["pcie"].contains("bandwidth_GBps"));
  CHECK(j.contains("nccl"));
  CHECK(j["sources"].size() == 2);
  CHECK(out.report.size() >= 3);
  // The file round-trips through the checker and applies: an NV2 link gets 2 x the per-lane figure.
  const std::string path = temp_path("dgx1.json");
  out.file.write(path);
  const CalibrationFile back = CalibrationFile::load(path);
  Topology t = load_topology("dgx1-v100");
  apply_calibration(t, back);
  bool nv2 = false;
  for (const auto& l : t.links())
    if (l.kind == LinkKind::NvLink && l.lanes == 2) {
      nv2 = true;
      CHECK(l.bandwidth == doctest::Approx(2 * j["links"]["nvlink"]["bandwidth_GBps_per_lane"].get<double>() * 1e9));
    }
  CHECK(nv2);
}

TEST_CASE("legacy gbytes links and bad link members")
{
  CalibrationFile c;
  c.merge({{"links", {{"pcie", {{"gbytes", 5.0}, {"latency_us", 3.0}}}}}});
  Topology t = load_topology("pcie-box");
  apply_calibration(t, c);
  for (const auto& l : t.links())
    if (l.kind == LinkKind::Pcie) {
      CHECK(l.bandwidth == doctest::Approx(5e9));
      CHECK(l.latency == doctest::Approx(3e-6));
    }
  CHECK_THROWS_WITH_AS(CalibrationFile::check({{"dtsim_calibration", 1}, {"links", {{"pcie", {{"bandwidth_GBps_per_lane", 3}}}}}}, "c.json"),
                       doctest::Contains("/links/pcie/bandwidth_GBps_per_lane"), InputError);
}

TEST_CASE("the host's pageable copy rates: bandwidthTest's rows reach the topology's host; a rate out of range exits 2")
{
  CalibrationFile c;
  c.merge({{"host_device", {{"h2d_pinned_GBps", 25.7}, {"h2d_pageable_GBps", 10.0}, {"d2h_pageable_GBps", 10.8}}}});
  Topology t = load_topology("dgx-a100");
  CHECK(t.host.pageable_h2d_bytes_per_s == 0);
  apply_calibration(t, c);
  CHECK(t.host.pageable_h2d_bytes_per_s == doctest::Approx(10.0e9));
  CHECK(t.host.pageable_d2h_bytes_per_s == doctest::Approx(10.8e9));
  for (const double bad : {0.0, -3.0, 5000.0})
    CHECK_THROWS_WITH_AS(CalibrationFile::check({{"dtsim_calibration", 1}, {"host_device", {{"d2h_pageable_GBps", bad}}}}, "c.json"),
                         doctest::Contains("at /host_device/d2h_pageable_GBps"), InputError);
}

TEST_CASE("issue 5: a calibration built from fixtures drives single-GPU ResNet-50 at the profile's step time")
{
  // Synthetic data: a bandwidthTest-format sample (one V100) and a synthetic ResNet-50 profile.
  const auto out = calibrate({{kData + "bandwidth/bandwidthTest_V100SXM2_format_sample.txt", kProfile}, "pcie-box",
                              std::nullopt, 0, {}});
  const std::string cal = temp_path("single.json");
  out.file.write(cal);
  CHECK(out.file.json["links"]["pcie"]["bandwidth_GBps"].get<double>() == doctest::Approx(11.4));  // pinned d2h
  const auto tot = profile_totals();
  const double expected = tot["fwd"].get<double>() + tot["bwd"].get<double>() + tot["opt"].get<double>();
  const nlohmann::json cluster = {{"base", "pcie-box"}, {"calibration", cal}};
  const double t = step_time(scenario_doc(cluster, {{"profile", cal}}, 1, "single"));
  CHECK(t == doctest::Approx(expected).epsilon(0.01));
  // Measured batch 64; batch 128 is linear in the samples (as for measured step times).
  CHECK(step_time(scenario_doc(cluster, {{"profile", cal}}, 1, "single", "resnet50", 128)) ==
        doctest::Approx(2 * (expected - tot["opt"].get<double>()) + tot["opt"].get<double>()).epsilon(0.01));
  // The raw profile_model.py JSON works as the profile too.
  CHECK(step_time(scenario_doc("pcie-box", {{"profile", kProfile}}, 1, "single")) == doctest::Approx(expected).epsilon(0.01));
}

TEST_CASE("profile without some layers: the rest get the timed layers' time per FLOP, and the notes say so")
{
  auto doc = load_json_file(kProfile);
  auto& layers = doc["model"]["layers"];
  const Model model = load_model("resnet50");
  double timed_fwd = 0, timed_bwd = 0, timed_flops = 0, missing_flops = 0;
  nlohmann::json kept = nlohmann::json::array();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i]["name"] == "fc" || layers[i]["name"] == "conv1") {
      missing_flops += static_cast<double>(model.layers[i].fwd_flops);
      continue;
    }
    timed_fwd += layers[i]["fwd_s"].get<double>();
    timed_bwd += layers[i]["bwd_s"].get<double>();
    timed_flops += static_cast<double>(model.layers[i].fwd_flops);
    kept.push_back(layers[i]);
  }
  layers = kept;
  const std::string path = temp_path("partial.json");
  std::ofstream(path) << doc.dump();
  const double expected = (timed_fwd + timed_bwd) * (1 + missing_flops / timed_flops) + doc["model"]["optimizer_s"].get<double>();
  const auto p = predict(parse_scenario(scenario_doc("pcie-box", {{"profile", path}}, 1, "single"), temp_path("s.json")));
  CHECK(p.result.iteration_time_s == doctest::Approx(expected).epsilon(0.01));
  bool said = false;
  for (const auto& n : p.result.notes)
    said = said || n.find("2 layers without a timing") != std::string::npos;
  CHECK(said);
  // A profile of another model is an input error at the profile's pointer.
  CHECK_THROWS_WITH_AS(step_time(scenario_doc("pcie-box", {{"profile", path}}, 1, "single", "toymodel", 20)),
                       doctest::Contains("/training/compute/profile"), InputError);
}

TEST_CASE("the cluster's calibration reaches every collective (NCCL launch overhead) and the links")
{
  const nlohmann::json compute = {{"single_gpu_throughput", 1000}};
  const double base = step_time(scenario_doc("dgx1-v100", compute, 8, "ddp", "toymodel", 20));
  CalibrationFile slow;
  slow.merge({{"nccl", {{"launch_overhead_us", 5000.0}}}});
  const std::string slow_path = temp_path("slow.json");
  slow.write(slow_path);
  const double with = step_time(scenario_doc({{"base", "dgx1-v100"}, {"calibration", slow_path}}, compute, 8, "ddp", "toymodel", 20));
  // ToyModel: one gradient bucket, one AllReduce per iteration, 5 ms launch each.
  CHECK(with - base == doctest::Approx(5e-3).epsilon(0.05));
  // DP (broadcast_coalesced + reduce_add) goes through the same options: slower by >= 2 calls.
  const double dp_base = step_time(scenario_doc("dgx1-v100", compute, 8, "dp", "toymodel", 20));
  const double dp_with = step_time(scenario_doc({{"base", "dgx1-v100"}, {"calibration", slow_path}}, compute, 8, "dp", "toymodel", 20));
  CHECK(dp_with - dp_base >= 2 * 4.9e-3);
}
