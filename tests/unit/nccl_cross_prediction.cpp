// Calibrated cross-prediction: fit NCCL's per-class latencies and per-link-class efficiencies on
// part of the measured data, predict the rest. (i) fit on sizes <= 8 MiB of a log, predict its
// larger sizes; (ii) fit on one log, predict another log of the same hardware. Targets: median
// |busbw error| <= 10% for sizes >= 1 MiB and <= 25% for 1 KiB - 1 MiB. The table is printed for
// every pair; the pairs where the target holds are asserted (see `holds` for those that do not).
#include "calibration/nccl_fit.hpp"
#include "sim/topology/topology_builder.hpp"
#include "sim/util/units.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

using namespace dtsim;

namespace {

struct LogCase {
  std::string file;  ///< path
  std::string topology;
  int nodes;
};

std::string shared_log(const char* name) { return std::string(DTSIM_VALIDATION_DIR) + "/nccl/" + name; }
/// A100 tables of other machines (tests/data/nccl/a100/README.md).
std::string a100_log(const char* name) { return std::string(DTSIM_TESTS_DIR) + "/data/nccl/a100/" + name; }
/// Scale-out H100 tables of nccl-tests issue 309 (tests/data/nccl/issue309/README.md).
std::string issue309_log(const char* name) { return std::string(DTSIM_TESTS_DIR) + "/data/nccl/issue309/" + name; }

std::string name_of(const LogCase& c) { return c.file.substr(c.file.find_last_of('/') + 1); }

Topology topology_of(const LogCase& c) { return load_topology(c.topology, c.nodes); }

/// Median |busbw error| of the rows with lo <= size < hi (and size > above).
double median_between(const ValidationResult& r, double lo, double hi, std::uint64_t above = 0)
{
  std::vector<double> v;
  for (const auto& row : r.rows)
    if (row.size > above && static_cast<double>(row.size) >= lo && static_cast<double>(row.size) < hi)
      v.push_back(row.busbw_error);
  return median_abs(v);
}

std::string pct(double v) { return std::isnan(v) ? std::string("   n/a") : fmt::format("{:5.1f}%", 100 * v); }

struct Outcome {
  double large = NAN, small = NAN;
};

Outcome predict(const LogCase& fit_on, std::uint64_t max_bytes, const LogCase& target, std::uint64_t above)
{
  const Topology t = topology_of(fit_on);
  const auto fit = fit_nccl_params(t, {load_nccl_tests_log(fit_on.file)},
                                   NcclParams::defaults(t.gpu.compute_capability > 0 ? t.gpu.compute_capability : 70),
                                   max_bytes);
  CollectiveOptions o;
  o.params = fit.params;
  const auto r = validate_log(topology_of(target), load_nccl_tests_log(target.file), o);
  Outcome out;
  out.large = median_between(r, kMiB, 1e300, above);
  out.small = median_between(r, 1024, kMiB, above);
  return out;
}

const LogCase kV100{shared_log("8xV100_SXM2_16GB_hybridcubemesh_allreduce.txt"), "dgx1-v100", 1};
const LogCase kA100{shared_log("8xA100_SXM4_80GB_nccl2.19_allreduce.txt"), "dgx-a100", 1};
const LogCase kA100x2{shared_log("2node_16xA100_SXM4_80GB_gcm_fixture_allreduce.txt"), "dgx-a100", 2};
const LogCase kH100{shared_log("8xH100_SXM_NVSwitch_NVLS_allreduce_issue290.txt"), "hgx-h100", 1};
const LogCase kH100x2a{shared_log("2node_16xH100_HGX_XE9680_IB_NDR400_allreduce_issue309.txt"), "hgx-h100", 2};
const LogCase kH100x2b{shared_log("multinode_H100_IB400_scaling_issue309_2node_default.txt"), "hgx-h100", 2};
const LogCase k2080{shared_log("pcie_2xRTX2080Ti_noP2P_allreduce.txt"), std::string(DTSIM_TESTS_DIR) + "/data/nccl/pcie_2xRTX2080Ti_noP2P.json", 1};
const LogCase k4090{shared_log("pcie_8xRTX4090_noP2P_stockdriver_allreduce.txt"), "pcie-box", 1};

const LogCase kA100oci{a100_log("a100_1n_oci_bmgpu48.txt"), "dgx-a100", 1};
const LogCase kA100thanos{a100_log("a100_1n_thanos_g8.txt"), "dgx-a100", 1};
const LogCase kA100thanosMpi{a100_log("a100_1n_thanos_mpi8.txt"), "dgx-a100", 1};
const LogCase kA100galvatron{a100_log("a100_1n_galvatron_fixture.txt"), "dgx-a100", 1};
const LogCase kA100gcm{a100_log("a100_1n_meta_gcm_fixture.txt"), "dgx-a100", 1};

const LogCase kGj4n{issue309_log("h100_ib400_4n_default_gjaion.txt"), "hgx-h100", 4};
const LogCase kGj8n{issue309_log("h100_ib400_8n_default_gjaion.txt"), "hgx-h100", 8};
const LogCase kQoofyk4n{issue309_log("h100_vm_4n_default_qoofyk.txt"), "hgx-h100", 4};
const LogCase kGjRing2n{issue309_log("h100_ib400_2n_ring_minctas24_qps2_gjaion.txt"), "hgx-h100", 2};

constexpr std::uint64_t k8MiB = 8u << 20;

}  // namespace

TEST_CASE("fit on sizes <= 8 MiB of a log, predict its larger sizes")
{
  std::string table = "fit <= 8 MiB -> same log > 8 MiB            | >= 1 MiB (pred) | 1K-1M (fitted)\n";
  // The A100 log (NCCL 2.19) was missed at 16.6% until A100's LL128 defaults (rate 0.62, Ring
  // hops 0.59, nccl_params.cpp): its rows <= 8 MiB hold two LL128 rows, too few to fit LL128's
  // rate, and its 16 MiB row is LL128. Now 9.3%; the A100 tables of other machines
  // (tests/data/nccl/a100), fitted the same way, predict their larger rows within 1.5-7.9%.
  struct Case {
    LogCase log;
    bool holds_large, holds_small;
  };
  for (const Case& k :
       {Case{kV100, true, true}, Case{kA100, true, true}, Case{kA100x2, true, true}, Case{kH100, true, true},
        Case{kH100x2a, true, true}, Case{kH100x2b, true, true}, Case{k2080, true, true}, Case{k4090, true, true},
        Case{kA100oci, true, true}, Case{kA100thanos, true, true}, Case{kA100thanosMpi, true, true},
        Case{kA100galvatron, true, true}}) {
    const LogCase& c = k.log;  // not a structured binding: CAPTURE's lambda (clang 14)
    const bool holds_large = k.holds_large, holds_small = k.holds_small;
    CAPTURE(c.file);
    std::size_t fit_rows = 0;
    for (const auto& r : load_nccl_tests_log(c.file).rows)
      fit_rows += r.size <= k8MiB ? 1 : 0;
    if (fit_rows < 3) {
      table += fmt::format("{:<48}| n/a: {} rows <= 8 MiB, too few to fit\n", name_of(c), fit_rows);
      continue;
    }
    const Outcome o = predict(c, k8MiB, c, k8MiB);
    const Outcome in = predict(c, k8MiB, c, 0);
    table += fmt::format("{:<48}| {}          | {}\n", name_of(c), pct(o.large), pct(in.small));
    if (holds_large)
      CHECK(o.large <= 0.10);
    if (holds_small && !std::isnan(in.small))
      CHECK(in.small <= 0.25);
  }
  MESSAGE(table);
}

TEST_CASE("fit on one log, predict another log of the same hardware")
{
  struct Pair {
    LogCase fit, target;
    bool holds_large, holds_small;  ///< whether each target is met today (asserted when true)
  };
  // Not met: OCI's A100 -> the shared 1-node A100 log (NCCL 2.19), 11.7%, and back, 10.2%. That
  // log ends at 128 MiB, and at 32-256 MiB it and two other -g 8 tables (thanos, Galvatron) run
  // 4-16% slower than dtsim; OCI's -g 8 and the MPI runs do not, and all meet dtsim within 2.4%
  // from 1 GiB: a fit on it lowers NVLink's efficiency (0.71) that OCI's large rows do not show,
  // and a fit on OCI cannot see its slow rows. Fits on the other A100 machines
  // (tests/data/nccl/a100) predict each other within 1.8-9.5% (>= 1 MiB).
  std::string table = "fit on -> predict                                                  | >= 1 MiB | 1K-1M\n";
  for (const Pair& p : {Pair{kH100x2a, kH100x2b, true, true}, Pair{kH100x2b, kH100x2a, true, true},
                        Pair{kA100, kA100x2, true, true}, Pair{kA100x2, kA100, true, true},
                        Pair{kH100, kH100x2a, true, true}, Pair{kH100, kH100x2b, true, true},
                        Pair{kA100thanos, kA100thanosMpi, true, true}, Pair{kA100thanosMpi, kA100thanos, true, true},
                        Pair{kA100oci, kA100gcm, true, true}, Pair{kA100oci, kA100galvatron, true, true},
                        Pair{kA100, kA100oci, false, true}, Pair{kA100, kA100thanos, true, true},
                        Pair{kA100oci, kA100, false, true}, Pair{kA100thanos, kA100oci, true, true},
                        Pair{kA100x2, kA100oci, true, true},
                        // Scale-out: a fit on 4 or 8 nodes puts the NICs' rate in the network efficiency
                        // (there NVLSTree is bound by the NICs), so 2, 4 and 8 nodes predict each other.
                        Pair{kGj4n, kGj8n, true, true}, Pair{kGj8n, kGj4n, true, true}, Pair{kGj4n, kH100x2b, true, true},
                        Pair{kGj8n, kH100x2b, true, true}, Pair{kQoofyk4n, kH100x2a, true, true},
                        Pair{kH100x2b, kQoofyk4n, true, true}, Pair{kGjRing2n, kH100x2b, true, true},
                        // Not met: a 2-node NVLSTree run loads each NIC with half of what an inner node of
                        // a 4-node tree carries, so it never reaches the NICs' limit and leaves the network
                        // efficiency at its preset (calibrate says so); gj-aion's 4- and 8-node runs reach
                        // 322 GB/s where issue 309's other 4-node cluster reaches 366 (NVIDIA: "a good
                        // number"; of gj-aion's: "possible, depending on your network").
                        Pair{kH100x2b, kGj4n, false, true}, Pair{kH100x2b, kGj8n, false, true}}) {
    CAPTURE(p.fit.file);
    CAPTURE(p.target.file);
    const Outcome o = predict(p.fit, 0, p.target, 0);
    table += fmt::format("{} -> {} | {}   | {}\n", name_of(p.fit), name_of(p.target), pct(o.large), pct(o.small));
    if (p.holds_large)
      CHECK(o.large <= 0.10);
    if (p.holds_small && !std::isnan(o.small))
      CHECK(o.small <= 0.25);
  }
  MESSAGE(table);
}
