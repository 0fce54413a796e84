// The bandwidth fitter recovers known link parameters from synthetic measurements (written by
// dtsim's own report writer, with ±3 % noise from a fixed seed, read back by the log parser), and
// gives the expected classes on published matrices.
#include "calibration/bandwidth_fit.hpp"
#include "calibration/bandwidth_logs.hpp"
#include "calibration/bandwidth_report.hpp"

#include <doctest/doctest.h>

#include <random>

using namespace dtsim::calibration;

namespace {

// DGX-1 hybrid cube mesh: NVLink lanes between V100s (0 = no NVLink).
const int kDgx1Lanes[8][8] = {{0, 1, 2, 1, 2, 0, 0, 0}, {1, 0, 1, 2, 0, 2, 0, 0}, {2, 1, 0, 2, 0, 0, 1, 0},
                              {1, 2, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 1, 2, 1}, {0, 2, 0, 0, 1, 0, 1, 2},
                              {0, 0, 1, 0, 2, 1, 0, 2}, {0, 0, 0, 1, 1, 2, 2, 0}};

struct Truth {
  double per_lane = 23.5, nvlink_lat = 1.9, nvlink_duplex = 0.97;
  double pcie = 9.0, pcie_lat = 2.6;
  double host = 10.5, host_lat = 17.0, host_duplex = 0.9;
  double h2d = 11.8, d2h = 12.5, h2d_pageable = 6.1;
};

/// Synthetic p2pBandwidthLatencyTest + host table of a DGX-1, as text.
std::string synthetic_dgx1(const Truth& t, bool with_topology, unsigned seed = 42)
{
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> noise(0.97, 1.03);
  const std::size_t n = 8;
  BandwidthMeasurements m;
  auto square = [&](double diag) { return Matrix(n, std::vector<double>(n, diag)); };
  m.p2p_connectivity = square(1);
  m.unidir_p2p_GBps = square(750);
  m.unidir_nop2p_GBps = square(750);
  m.bidir_p2p_GBps = square(1500);
  m.bidir_nop2p_GBps = square(1500);
  m.latency_p2p_us = square(1.8);
  m.latency_nop2p_us = square(1.8);
  if (with_topology)
    m.topology.assign(n, std::vector<std::string>(n, "X"));
  for (std::size_t i = 0; i < n; ++i) {
    m.gpu_names.push_back("Tesla V100-SXM2-16GB");
    m.h2d_pinned_GBps.push_back(t.h2d * noise(rng));
    m.d2h_pinned_GBps.push_back(t.d2h * noise(rng));
    m.h2d_pageable_GBps.push_back(t.h2d_pageable * noise(rng));
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j)
        continue;
      const int lanes = kDgx1Lanes[i][j];
      m.unidir_p2p_GBps[i][j] = (lanes ? lanes * t.per_lane : t.pcie) * noise(rng);
      m.latency_p2p_us[i][j] = (lanes ? t.nvlink_lat : t.pcie_lat) * noise(rng);
      m.unidir_nop2p_GBps[i][j] = t.host * noise(rng);
      m.latency_nop2p_us[i][j] = t.host_lat * noise(rng);
      if (with_topology)
        m.topology[i][j] = lanes ? "NV" + std::to_string(lanes) : "SYS";
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j) {
        const int lanes = kDgx1Lanes[i][j];
        const double duplex = lanes ? t.nvlink_duplex : 1.0;
        m.bidir_p2p_GBps[i][j] = duplex * (m.unidir_p2p_GBps[i][j] + m.unidir_p2p_GBps[j][i]) * noise(rng);
        m.bidir_nop2p_GBps[i][j] = t.host_duplex * (m.unidir_nop2p_GBps[i][j] + m.unidir_nop2p_GBps[j][i]) * noise(rng);
      }
  return format_bandwidth_report(m);
}

void check_recovery(const nlohmann::json& fit, const Truth& t)
{
  const auto& nv = fit.at("links").at("nvlink");
  CHECK(nv.at("bandwidth_GBps_per_lane").get<double>() == doctest::Approx(t.per_lane).epsilon(0.02));
  CHECK(nv.at("bandwidth_GBps_by_lanes").at("2").get<double>() == doctest::Approx(2 * t.per_lane).epsilon(0.02));
  CHECK(nv.at("latency_us").get<double>() == doctest::Approx(t.nvlink_lat).epsilon(0.03));
  CHECK(nv.at("duplex_efficiency").get<double>() == doctest::Approx(t.nvlink_duplex).epsilon(0.03));
  CHECK(nv.at("pairs").get<int>() == 32);  // 16 NVLink pairs, both directions
  const auto& pcie = fit.at("links").at("pcie");
  CHECK(pcie.at("bandwidth_GBps").get<double>() == doctest::Approx(t.pcie).epsilon(0.03));
  CHECK(pcie.at("latency_us").get<double>() == doctest::Approx(t.pcie_lat).epsilon(0.03));
  CHECK(pcie.at("pairs").get<int>() == 24);
  const auto& host = fit.at("links").at("host_via_cpu");
  CHECK(host.at("bandwidth_GBps").get<double>() == doctest::Approx(t.host).epsilon(0.03));
  CHECK(host.at("latency_us").get<double>() == doctest::Approx(t.host_lat).epsilon(0.03));
  CHECK(host.at("duplex_efficiency").get<double>() == doctest::Approx(t.host_duplex).epsilon(0.03));
  const auto& hd = fit.at("host_device");
  CHECK(hd.at("h2d_pinned_GBps").get<double>() == doctest::Approx(t.h2d).epsilon(0.03));
  CHECK(hd.at("d2h_pinned_GBps").get<double>() == doctest::Approx(t.d2h).epsilon(0.03));
  CHECK(hd.at("h2d_pageable_GBps").get<double>() == doctest::Approx(t.h2d_pageable).epsilon(0.03));
  // Uniform ±3 % noise has an rms of 3 %/sqrt(3) = 1.7 %.
  const double rms = fit.at("fit").at("rms_relative_error").get<double>();
  CHECK(rms > 0.008);
  CHECK(rms < 0.03);
  CHECK(fit.at("fit").at("points").get<int>() == 32 + 24 + 56);
}

}  // namespace

TEST_CASE("fitter recovers DGX-1 parameters, classes from the topology matrix")
{
  const Truth t;
  const auto runs = parse_bandwidth_log(synthetic_dgx1(t, true), "synthetic");
  REQUIRE(runs.size() == 1);
  const auto fit = fit_bandwidth(runs[0]);
  CHECK(fit.at("fit").at("classification") == "topology");
  check_recovery(fit, t);
}

TEST_CASE("fitter recovers DGX-1 parameters, classes from bandwidth clustering")
{
  Truth t;
  t.per_lane = 21.0;
  t.host = 12.0;
  for (unsigned seed : {1u, 7u, 42u}) {
    CAPTURE(seed);
    const auto runs = parse_bandwidth_log(synthetic_dgx1(t, false, seed), "synthetic");
    const auto fit = fit_bandwidth(runs.at(0));
    CHECK(fit.at("fit").at("classification") == "clustering");
    check_recovery(fit, t);
  }
}

TEST_CASE("caller-supplied classes win; one NVLink cluster gives per-pair bandwidth only")
{
  const auto runs = load_bandwidth_log(std::string(DTSIM_TESTS_DIR) +
                                       "/data/calibration/bandwidth/p2p_matrices_A100_H100_GB200_H200_mlengineering.txt");
  const auto& h100 = runs.at(1);
  const auto clustered = fit_bandwidth(h100);
  CHECK(clustered.at("fit").at("classification") == "clustering");
  CHECK(!clustered.at("links").at("nvlink").contains("bandwidth_GBps_per_lane"));
  CHECK(clustered.at("links").at("nvlink").at("bandwidth_GBps_per_pair").get<double>() == doctest::Approx(376.1).epsilon(0.005));

  FitOptions o;
  o.classes = PairClasses(8, std::vector<std::optional<PairClass>>(8, PairClass{LinkClass::NvLink, 18}));
  for (int i = 0; i < 8; ++i)
    (*o.classes)[i][i].reset();
  const auto given = fit_bandwidth(h100, o);
  CHECK(given.at("fit").at("classification") == "caller");
  CHECK(given.at("links").at("nvlink").at("bandwidth_GBps_per_lane").get<double>() ==
        doctest::Approx(376.1 / 18).epsilon(0.005));
}

TEST_CASE("published matrices: DGX A100 from its topology, DGX-1 V100 by clustering")
{
  const std::string dir = std::string(DTSIM_TESTS_DIR) + "/data/calibration/bandwidth/";
  const auto a100 = fit_bandwidth(load_bandwidth_log(dir + "p2p_matrix_8xA100_SXM4_80GB_NVSwitch_DistServe_issue3.txt").at(0));
  CHECK(a100.at("fit").at("classification") == "topology");
  // 56 NV12 cells between 265.05 and 275.53 GB/s; median 274.0 -> 22.8 GB/s per lane.
  CHECK(a100.at("links").at("nvlink").at("bandwidth_GBps_per_lane").get<double>() == doctest::Approx(274.0 / 12).epsilon(0.005));
  CHECK(a100.at("links").at("nvlink").at("latency_us").get<double>() == doctest::Approx(3.30).epsilon(0.02));
  CHECK(a100.at("links").at("host_via_cpu").at("latency_us").get<double>() == doctest::Approx(24.5).epsilon(0.01));
  CHECK(!a100.at("links").contains("pcie"));

  const auto v100 = fit_bandwidth(load_bandwidth_log(dir + "p2p_h2d_8xV100_SXM2_32GB_hybridcubemesh_GPUInspector.txt").at(0));
  CHECK(v100.at("fit").at("classification") == "clustering");
  const auto& nv = v100.at("links").at("nvlink");
  CHECK(nv.at("pairs").get<int>() == 32);
  CHECK(nv.at("bandwidth_GBps_per_lane").get<double>() == doctest::Approx(22.54 * 1.073741824).epsilon(0.005));
  CHECK(v100.at("links").at("pcie").at("pairs").get<int>() == 24);
  CHECK(v100.at("host_device").at("h2d_pinned_GBps").get<double>() == doctest::Approx(12.14 * 1.073741824));
}

TEST_CASE("one GPU: the peer-to-peer part is reported as not measurable")
{
  const auto runs = load_bandwidth_log(std::string(DTSIM_TESTS_DIR) +
                                       "/data/calibration/bandwidth/bandwidthTest_V100SXM2_format_sample.txt");
  const auto fit = fit_bandwidth(runs.at(0));
  CHECK(fit.at("links").empty());
  CHECK(fit.at("host_device").at("d2d_GBps").get<double>() == doctest::Approx(739.8));
  REQUIRE(!fit.at("not_measured").empty());
  CHECK(fit.at("not_measured")[0].get<std::string>().find("one GPU") != std::string::npos);
}

TEST_CASE("merge_runs takes each quantity from the first run that has it")
{
  const std::string dir = std::string(DTSIM_TESTS_DIR) + "/data/calibration/bandwidth/";
  auto runs = load_bandwidth_log(dir + "p2p_matrix_4gpu_partialNVLink_TH2K_cudaaware_blog.txt");
  const auto bt = load_bandwidth_log(dir + "bandwidthTest_V100SXM2_format_sample.txt");
  runs.insert(runs.end(), bt.begin(), bt.end());
  const auto merged = merge_runs(runs);
  CHECK(merged.format == "p2pBandwidthLatencyTest+bandwidthTest");
  CHECK(merged.unidir_p2p_GBps.at(0).at(1) == doctest::Approx(48.34));
  CHECK(merged.h2d_pinned_GBps.at(0) == doctest::Approx(9.6));
}
