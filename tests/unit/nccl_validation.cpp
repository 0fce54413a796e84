// Validation against published nccl-tests tables (tests/data/validation/nccl) with the shipped presets
// and no calibration: median |busbw error| <= 15% for sizes >= 1 MiB on every AllReduce table.
// Fails if a change to the model pushes any table past the target.
#include "calibration/nccl_fit.hpp"
#include "sim/topology/topology_builder.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace dtsim;

TEST_CASE("median |busbw error| >= 1 MiB stays within 15% on every AllReduce table")
{
  struct Case { const char* log; std::string topology; int nodes; };
  const std::string data = DTSIM_TESTS_DIR;
  for (const Case& c : {Case{"8xV100_SXM2_16GB_hybridcubemesh_allreduce.txt", "dgx1-v100", 1},
                        Case{"8xA100_SXM4_80GB_nccl2.19_allreduce.txt", "dgx-a100", 1},
                        Case{"8xH100_SXM_NVSwitch_NVLS_allreduce_issue290.txt", "hgx-h100", 1},
                        Case{"2node_16xH100_HGX_XE9680_IB_NDR400_allreduce_issue309.txt", "hgx-h100", 2},
                        Case{"multinode_H100_IB400_scaling_issue309_2node_default.txt", "hgx-h100", 2},
                        Case{"2node_16xA100_SXM4_80GB_gcm_fixture_allreduce.txt", "dgx-a100", 2},
                        Case{"pcie_2xRTX2080Ti_noP2P_allreduce.txt", data + "/data/nccl/pcie_2xRTX2080Ti_noP2P.json", 1},
                        Case{"pcie_8xRTX4090_noP2P_stockdriver_allreduce.txt", "pcie-box", 1}}) {
    CAPTURE(c.log);
    const auto log = load_nccl_tests_log(std::string(DTSIM_VALIDATION_DIR) + "/nccl/" + c.log);
    const Topology t = load_topology(c.topology, c.nodes);
    const auto result = validate_log(t, log, CollectiveOptions{});
    MESSAGE(c.log, ": median |busbw error| >= 1 MiB = ", 100 * result.median_abs_error_large, "%");
    REQUIRE_FALSE(std::isnan(result.median_abs_error_large));
    CHECK(result.median_abs_error_large <= 0.15);
  }
}

TEST_CASE("calibrated on sizes <= 8 MiB of one 2-node H100 log, the other 2-node log is predicted")
{
  const std::string dir = std::string(DTSIM_VALIDATION_DIR) + "/nccl/";
  const auto fit_log = load_nccl_tests_log(dir + "2node_16xH100_HGX_XE9680_IB_NDR400_allreduce_issue309.txt");
  const auto other = load_nccl_tests_log(dir + "multinode_H100_IB400_scaling_issue309_2node_default.txt");
  const Topology t = load_topology("hgx-h100", 2);
  const auto fit = fit_nccl_params(t, {fit_log}, NcclParams::defaults(90), 8u << 20);
  CollectiveOptions o;
  o.params = fit.params;
  const auto result = validate_log(t, other, o);
  MESSAGE("fitted: launch ", fit.params.launch_overhead_us, " us, hop scale ", fit.params.hop_latency_scale, ", ",
          fit.efficiency_fitted, "; other log median >= 1 MiB ", 100 * result.median_abs_error_large, "%");
  CHECK(fit.after.at(0).median_abs_error_small <= 0.25);  // the calibrated target for 1 KiB - 1 MiB
  CHECK(result.median_abs_error_large <= 0.25);
}

TEST_CASE("scale-out: 4- and 8-node H100 tables (nccl-tests#309, not used to build the model)")
{
  // Measured by others on 8 x H100 + 8 x 400G IB per node (tests/data/nccl/issue309). dtsim's
  // NIC bound is ~375 GB/s busbw; gj-aion's default runs reach ~322 (their NCCL_MIN_CTAS=24 run
  // 391 at 8 nodes), qoofyk's NCCL 2.26 run 366. Bound: 20%, above the 15% target, so that the
  // test fails if scale-out prediction degrades (it was 20-33% before hops became streams).
  struct Case { const char* log; int nodes; };
  for (const Case& c : {Case{"h100_ib400_4n_default_gjaion.txt", 4}, Case{"h100_ib400_8n_default_gjaion.txt", 8},
                        Case{"h100_vm_4n_default_qoofyk.txt", 4}, Case{"h100_ib400_8n_minctas24_qps2_gjaion.txt", 8}}) {
    CAPTURE(c.log);
    const auto log = load_nccl_tests_log(std::string(DTSIM_TESTS_DIR) + "/data/nccl/issue309/" + c.log);
    CHECK(log.ranks == 8 * c.nodes);
    const auto result = validate_log(load_topology("hgx-h100", c.nodes), log, CollectiveOptions{});
    MESSAGE(c.log, ": median |busbw error| >= 1 MiB = ", 100 * result.median_abs_error_large, "%");
    CHECK(result.median_abs_error_large <= 0.20);
  }
}

TEST_CASE("a table run under NCCL_ALGO=Ring is simulated with Ring (the log's own setting)")
{
  // gj-aion's 2-node run with NCCL_ALGO=Ring NCCL_MIN_CTAS=24 (tests/data/nccl/issue309). Under
  // NCCL's own choice dtsim would run Tree there and miss by 21.6%; with Ring, 12.1%.
  const auto log = load_nccl_tests_log(std::string(DTSIM_TESTS_DIR) +
                                       "/data/nccl/issue309/h100_ib400_2n_ring_minctas24_qps2_gjaion.txt");
  const auto result = validate_log(load_topology("hgx-h100", 2), log, CollectiveOptions{});
  for (const auto& r : result.rows)
    CHECK(r.algorithm.rfind("Ring/", 0) == 0);
  MESSAGE("median |busbw error| >= 1 MiB = ", 100 * result.median_abs_error_large, "%");
  CHECK(result.median_abs_error_large <= 0.15);
  // A command line's --algo wins over the log's setting.
  NcclTestsLog tree = log;
  tree.nccl_env.emplace_back("NCCL_ALGO", "Tree");
  CHECK(validate_log(load_topology("hgx-h100", 2), tree, CollectiveOptions{}).rows.back().algorithm.rfind("Tree/", 0) == 0);
}

TEST_CASE("A100 tables of other machines (not used to build the model) stay within 15%")
{
  // tests/data/nccl/a100: five single-node tables (-g 8 and MPI, NCCL 2.16 to pip 2.2x) and a
  // 2-node one. Measured on this version: 1.5-9.6% at >= 1 MiB; the shared A100 log is 5.7%.
  struct Case { const char* log; int nodes; };
  for (const Case& c : {Case{"a100_1n_oci_bmgpu48.txt", 1}, Case{"a100_1n_thanos_g8.txt", 1},
                        Case{"a100_1n_thanos_mpi8.txt", 1}, Case{"a100_1n_galvatron_fixture.txt", 1},
                        Case{"a100_1n_meta_gcm_fixture.txt", 1}, Case{"a100_2n_meta_gcm_pairwise_fixture.txt", 2}}) {
    CAPTURE(c.log);
    const auto log = load_nccl_tests_log(std::string(DTSIM_TESTS_DIR) + "/data/nccl/a100/" + c.log);
    const auto result = validate_log(load_topology("dgx-a100", c.nodes), log, CollectiveOptions{});
    MESSAGE(c.log, ": median |busbw error| >= 1 MiB = ", 100 * result.median_abs_error_large, "%");
    CHECK(result.median_abs_error_large <= 0.15);
  }
}

TEST_CASE("2 x p4d (4 x 100 Gb/s EFA per node): NCCL's Tree, beyond what a ring gets from the NICs")
{
  // tests/data/nccl/a100/README.md. A ring is bound by the 4 x 12.5 GB/s of NICs (bus 48 GB/s at
  // the network efficiency); the table reaches 76 GB/s at 1 GiB, as a 2-node tree does. From
  // 128 MiB (where EFA's latency no longer dominates) dtsim runs Tree and is within 15%:
  // 11.5-13.4% on this version.
  const std::string dir = std::string(DTSIM_TESTS_DIR) + "/data/nccl/a100/";
  const auto log = load_nccl_tests_log(dir + "a100_2n_efa4x100_aws_p4d_dlami.txt");
  const auto result = validate_log(load_topology(dir + "p4d_24xlarge.json", 2), log, CollectiveOptions{});
  int large = 0;
  for (const auto& r : result.rows) {
    if (r.size < (128u << 20))
      continue;
    CAPTURE(r.size);
    ++large;
    CHECK(r.algorithm.rfind("Tree/", 0) == 0);
    CHECK(std::abs(r.busbw_error) <= 0.15);
  }
  CHECK(large == 4);
}
