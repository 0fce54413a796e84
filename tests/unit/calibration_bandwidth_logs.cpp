// Bandwidth-log readers on every file of the shared validation/bandwidth/ data (copied, with their source
// headers, to tests/data/calibration/bandwidth/): values of a few cells, as published.
#include "calibration/bandwidth_logs.hpp"
#include "calibration/bandwidth_log_detail.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

using namespace dtsim::calibration;

namespace {
const std::string kDir = std::string(DTSIM_TESTS_DIR) + "/data/calibration/bandwidth/";
const double kGiB = 1.073741824;
std::vector<BandwidthMeasurements> load(const std::string& name) { return load_bandwidth_log(kDir + name); }
}  // namespace

TEST_CASE("every fixture parses into at least one run")
{
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    CAPTURE(entry.path().string());
    const auto runs = load_bandwidth_log(entry.path().string());
    CHECK(!runs.empty());
    for (const auto& run : runs)
      CHECK(!run.format.empty());
    ++files;
  }
  CHECK(files >= 14);
}

TEST_CASE("bandwidthTest values as a CSV table: one run per GPU")
{
  const auto runs = load("h2d_bandwidthTest_T4_V100SXM2_A100SXM4_cloudVM_router-gao.txt");
  REQUIRE(runs.size() == 3);
  CHECK(runs[1].gpu_names.at(0) == "Tesla V100-SXM2-16GB");
  CHECK(runs[1].h2d_pinned_GBps.at(0) == doctest::Approx(9.6));
  CHECK(runs[1].d2h_pinned_GBps.at(0) == doctest::Approx(11.4));
  CHECK(runs[1].d2d_GBps.at(0) == doctest::Approx(739.8));
  CHECK(runs[2].h2d_pinned_GBps.at(0) == doctest::Approx(12.3));
}

TEST_CASE("pinned vs pageable table grouped by system")
{
  const auto runs = load("h2d_pinned_vs_pageable_DGXA100_vs_DellPCIeA100_gengwg.txt");
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].label == "DGX A100 / NVIDIA A100-SXM4-80GB");
  CHECK(runs[0].h2d_pinned_GBps.at(0) == doctest::Approx(25.7));
  CHECK(runs[0].h2d_pageable_GBps.at(0) == doctest::Approx(10.0));
  CHECK(runs[0].d2h_pageable_GBps.at(0) == doctest::Approx(10.8));
  CHECK(runs[1].h2d_pageable_GBps.at(0) == doctest::Approx(3.3));
  CHECK(runs[1].d2h_pinned_GBps.at(0) == doctest::Approx(24.6));
}

TEST_CASE("bandwidthTest's own output format, GB/s and MB/s")
{
  const auto runs = load("bandwidthTest_V100SXM2_format_sample.txt");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].format == "bandwidthTest");
  CHECK(runs[0].gpu_names.at(0) == "Tesla V100-SXM2-16GB");
  CHECK(runs[0].h2d_pinned_GBps.at(0) == doctest::Approx(9.6));
  CHECK(runs[0].d2h_pinned_GBps.at(0) == doctest::Approx(11.4));
  CHECK(runs[0].d2d_GBps.at(0) == doctest::Approx(739.8));
  CHECK(runs[0].h2d_pageable_GBps.at(0) == doctest::Approx(6.5));  // largest transfer, MB/s -> GB/s
  CHECK(runs[0].d2h_pageable_GBps.at(0) == doctest::Approx(7.2));
}

TEST_CASE("nvbandwidth GPU->GPU matrix with N/A diagonal")
{
  const auto runs = load("nvbandwidth_6xRTXA6000_PCIe4_d2d_issue50.txt");
  REQUIRE(runs.size() == 1);
  const auto& m = runs[0].unidir_p2p_GBps;
  REQUIRE(m.size() == 6);
  CHECK(!has_value(m[0][0]));
  CHECK(m[0][3] == doctest::Approx(21.95));
  CHECK(m[5][4] == doctest::Approx(26.35));
}

TEST_CASE("nvbandwidth host rows, CE and SM, truncated block skipped")
{
  const auto ce = load("nvbandwidth_8xRTX4090_h2d_d2h_ce_issue15.txt");
  REQUIRE(ce.size() == 1);
  REQUIRE(ce[0].h2d_pinned_GBps.size() == 8);
  CHECK(ce[0].h2d_pinned_GBps[0] == doctest::Approx(25.50));
  CHECK(ce[0].h2d_pinned_GBps[3] == doctest::Approx(26.30));
  CHECK(ce[0].d2h_pinned_GBps[5] == doctest::Approx(27.11));
  CHECK(ce[0].bidir_p2p_GBps.empty());

  const auto sm = load("nvbandwidth_H100cluster_h2d_d2h_sm_issue24.txt");
  REQUIRE(sm.size() == 1);
  CHECK(sm[0].h2d_pinned_GBps.at(7) == doctest::Approx(35.06));
  CHECK(sm[0].d2h_pinned_GBps.at(0) == doctest::Approx(52.77));
  CHECK(!sm[0].notes.empty());

  const auto csv = load("nvbandwidth_A100SXM4_40GB_h2d_sm_vs_buffersize_issue42.csv");
  REQUIRE(csv.size() == 1);
  CHECK(csv[0].h2d_pinned_GBps.at(0) == doctest::Approx(25.13));  // best over buffer sizes
}

TEST_CASE("GPUInspector.jl REPL output in GiB/s")
{
  const auto a100 = load("p2p_h2d_8xA100_SXM4_40GB_DGXA100_GPUInspector.txt");
  REQUIRE(a100.size() == 1);
  CHECK(a100[0].h2d_pageable_GBps.at(0) == doctest::Approx(11.84 * kGiB));
  CHECK(a100[0].h2d_pinned_GBps.at(0) == doctest::Approx(24.33 * kGiB));
  REQUIRE(a100[0].unidir_p2p_GBps.size() == 8);
  CHECK(a100[0].unidir_p2p_GBps[0][1] == doctest::Approx(245.706 * kGiB));
  CHECK(!has_value(a100[0].unidir_p2p_GBps[3][3]));
  CHECK(a100[0].bidir_p2p_GBps.at(7).at(1) == doctest::Approx(416.936 * kGiB));

  const auto v100 = load("p2p_h2d_8xV100_SXM2_32GB_hybridcubemesh_GPUInspector.txt");
  REQUIRE(v100.size() == 1);
  CHECK(v100[0].unidir_p2p_GBps.at(0).at(2) == doctest::Approx(45.0071 * kGiB));
  CHECK(v100[0].unidir_p2p_GBps.at(5).at(0) == doctest::Approx(6.63411 * kGiB));
  CHECK(v100[0].p2p_connectivity.at(0).at(7) == 1);
  CHECK(v100[0].h2d_pinned_GBps.at(0) == doctest::Approx(12.14 * kGiB));
}

TEST_CASE("p2pBandwidthLatencyTest excerpts of three machines in one file")
{
  const auto runs = load("p2p_matrices_A100_H100_GB200_H200_mlengineering.txt");
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].unidir_p2p_GBps[0][1] == doctest::Approx(274.55));
  CHECK(runs[0].unidir_p2p_GBps[0][0] == doctest::Approx(1581.48));
  CHECK(runs[1].unidir_p2p_GBps[2][1] == doctest::Approx(393.28));
  REQUIRE(runs[2].unidir_p2p_GBps.size() == 4);
  CHECK(runs[2].unidir_p2p_GBps[0][3] == doctest::Approx(748.08));
}

TEST_CASE("p2pBandwidthLatencyTest full output: all matrices, GPU and CPU latency")
{
  const auto runs = load("p2p_matrix_4gpu_partialNVLink_TH2K_cudaaware_blog.txt");
  REQUIRE(runs.size() == 1);
  const auto& r = runs[0];
  CHECK(r.p2p_connectivity[2][1] == 1);
  CHECK(r.unidir_p2p_GBps[0][1] == doctest::Approx(48.34));
  CHECK(r.unidir_p2p_GBps[2][3] == doctest::Approx(38.30));
  CHECK(r.unidir_nop2p_GBps[0][1] == doctest::Approx(9.80));
  CHECK(r.bidir_p2p_GBps[0][1] == doctest::Approx(96.39));
  CHECK(r.bidir_nop2p_GBps[3][2] == doctest::Approx(10.35));
  CHECK(r.latency_nop2p_us[0][1] == doctest::Approx(18.43));
  CHECK(r.cpu_latency_nop2p_us[3][0] == doctest::Approx(9.38));
  CHECK(r.latency_p2p_us[0][3] == doctest::Approx(2.73));
  CHECK(r.cpu_latency_p2p_us[1][0] == doctest::Approx(2.39));
}

TEST_CASE("p2pBandwidthLatencyTest with device names and nvidia-smi topo -m")
{
  const auto runs = load("p2p_matrix_8xA100_SXM4_80GB_NVSwitch_DistServe_issue3.txt");
  REQUIRE(runs.size() == 1);
  const auto& r = runs[0];
  CHECK(r.gpu_names.at(7) == "NVIDIA A100-SXM4-80GB");
  REQUIRE(r.topology.size() == 8);
  CHECK(r.topology[0][1] == "NV12");
  CHECK(r.topology[3][3] == "X");
  CHECK(r.unidir_p2p_GBps[0][1] == doctest::Approx(268.94));
  CHECK(r.bidir_p2p_GBps[4][5] == doctest::Approx(517.80));
  CHECK(r.latency_nop2p_us[7][0] == doctest::Approx(24.34));
  CHECK(r.cpu_latency_p2p_us[7][7] == doctest::Approx(3.03));
}

TEST_CASE("dtsim-bench-link on one H200: nvidia-smi topo -m's terminal escapes are dropped")
{
  // Driver 580 underlines the header row (ESC[4m ... ESC[0m) also into a file; read as text, the
  // row "GPU0 X 0-15 ..." was taken for a header and the log refused.
  const auto runs = load("bench_link_H200_1gpu_escapes.txt");
  REQUIRE(runs.size() == 1);
  const auto& r = runs[0];
  REQUIRE(r.topology.size() == 1);
  CHECK(r.topology[0][0] == "X");
  CHECK(r.h2d_pinned_GBps.at(0) == doctest::Approx(55.12));
  CHECK(r.d2h_pageable_GBps.at(0) == doctest::Approx(10.75));
  // The same machine's JSON holds the same text in machine.topology_text.
  const auto json = load_bandwidth_log(std::string(DTSIM_TESTS_DIR) + "/../calibration/measured/h200-1gpu-2026-11-26/link.json");
  REQUIRE(json.size() == 1);
  REQUIRE(json[0].topology.size() == 1);
  CHECK(json[0].h2d_pinned_GBps.at(0) == doctest::Approx(r.h2d_pinned_GBps.at(0)).epsilon(1e-3));
  CHECK(dtsim::calibration::detail::without_terminal_escapes("\x1b[1;31mGPU0\x1b[0m \x1b[") == "GPU0 \x1b[");
}

TEST_CASE("two runs of p2pBandwidthLatencyTest (stock vs P2P driver) split into two")
{
  const auto runs = load("p2p_matrix_8xRTX4090_PCIe4_noSwitch_stock_vs_tinygradP2P.txt");
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].p2p_connectivity[0][1] == 0);
  CHECK(runs[0].unidir_p2p_GBps[0][1] == doctest::Approx(18.83));
  CHECK(runs[0].latency_nop2p_us[0][1] == doctest::Approx(20.26));
  CHECK(runs[0].cpu_latency_nop2p_us[0][0] == doctest::Approx(4.04));
  CHECK(runs[1].p2p_connectivity.empty());
  CHECK(runs[1].unidir_p2p_GBps[0][1] == doctest::Approx(25.60));
  CHECK(runs[1].bidir_p2p_GBps[7][5] == doctest::Approx(50.43));
  CHECK(runs[1].latency_p2p_us[4][0] == doctest::Approx(1.69));
}

TEST_CASE("p2pBandwidthLatencyTest followed by an nccl-tests table (ignored)")
{
  const auto runs = load("p2p_nccl_4xA100_PCIE_40GB_SYS_sm02_blog.txt");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].unidir_p2p_GBps[0][2] == doctest::Approx(8.33));
  CHECK(runs[0].unidir_nop2p_GBps[3][2] == doctest::Approx(11.40));
  CHECK(runs[0].latency_p2p_us[2][3] == doctest::Approx(1.93));
}

TEST_CASE("bad input: exit-2 errors naming the file and line")
{
  CHECK_THROWS_AS(parse_bandwidth_log("hello\nworld\n", "x.txt"), dtsim::InputError);
  const std::string bad = "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n"
                          "   D\\D     0      1\n     0 100.0  abc\n     1 20.0 100.0\n";
  try {
    parse_bandwidth_log(bad, "bad.txt");
    FAIL("expected an InputError");
  } catch (const dtsim::InputError& e) {
    CHECK(e.file() == "bad.txt");
    CHECK(e.problem().find("line 3") != std::string::npos);
  }
  CHECK_THROWS_AS(load_bandwidth_log(kDir + "does-not-exist.txt"), dtsim::InputError);
}
