// The host as a shared machine (issue 32): cores shared by every thread, SMT siblings, the queue past
// the hardware threads, the load curve (default, calibrated, turbo figures), and dtsim calibrate's
// reading of host_costs.py's load-curve JSON.
#include "calibration/host_load_curve.hpp"
#include "sim/strategies/host_model.hpp"
#include "sim/util/json_reader.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace dtsim;

TEST_CASE("host: threads past the cores share them as SMT siblings, past the hardware threads they queue")
{
  HostCpus dgx1;  // 2 x 20 cores, 2 threads per core
  dgx1.cores = 40;
  dgx1.threads_per_core = 2;
  dgx1.curve = default_load_curve();
  HostDemand d;
  d.workers = 64;  // 8 processes x 8 workers, as NVIDIA's DGX-1 ResNet-50 AMP runs
  d.main_threads = 8;
  const HostLoad l = host_load(dgx1, d);
  CHECK(l.busy_threads == doctest::Approx(72));
  CHECK(l.capacity == doctest::Approx(40 + 0.3 * 32));
  CHECK(l.share == doctest::Approx((40 + 0.3 * 32) / 72));
  CHECK_FALSE(l.oversubscribed);
  CHECK(l.busy_fraction == doctest::Approx(1.0));
  CHECK(l.load_ratio == doctest::Approx(1.280 * 16 / 17));
  CHECK(l.limit().rfind("cores", 0) == 0);

  HostCpus vm;  // 16 vCPUs, no SMT: 18 runnable threads queue
  vm.cores = 16;
  HostDemand q;
  q.workers = 16;
  q.main_threads = 1;
  q.pin_threads = 1;
  const HostLoad o = host_load(vm, q);
  CHECK(o.oversubscribed);
  CHECK(o.share == doctest::Approx(16.0 / 18.0));
  CHECK(o.load_ratio == 1.0);  // no curve given: flat

  HostDemand light;
  light.workers = 2;
  light.main_threads = 1;
  const HostLoad idle = host_load(dgx1, light);
  CHECK(idle.share == 1.0);
  CHECK(idle.load_ratio == doctest::Approx(1 + 0.205 * 3.0 / 40).epsilon(0.01));
  CHECK(idle.limit().empty());
}

TEST_CASE("host: vendor turbo figures raise the cost as the cores fill, unless the curve was measured there")
{
  HostCpus c;
  c.cores = 40;
  c.sockets = 2;
  c.threads_per_core = 2;
  c.turbo_max_ghz = 3.6;
  c.turbo_all_core_ghz = 2.7;
  CHECK(c.clock_ratio(2) == doctest::Approx(1.0));  // one core per socket
  CHECK(c.clock_ratio(40) == doctest::Approx(3.6 / 2.7));
  CHECK(c.clock_ratio(80) == doctest::Approx(3.6 / 2.7));
  CHECK(c.clock_ratio(21) == doctest::Approx(3.6 / (3.6 - 0.9 * 9.5 / 19)));
  c.curve_calibrated = true;
  CHECK(c.clock_ratio(40) == 1.0);
}

TEST_CASE("load curve: linear between points, flat beyond them")
{
  LoadCurve c;
  c.points = {{0.25, 1.0}, {0.5, 1.2}, {1.0, 1.1}};
  CHECK(c.at(0) == 1.0);
  CHECK(c.at(0.375) == doctest::Approx(1.1));
  CHECK(c.at(0.75) == doctest::Approx(1.15));
  CHECK(c.at(2) == doctest::Approx(1.1));
  CHECK(LoadCurve{}.at(0.5) == 1.0);
}

TEST_CASE("calibrate: host_costs.py's load curve, net of the share of a CPU each thread got")
{
  const std::string path = std::string(DTSIM_TESTS_DIR) + "/../calibration/measured/h200-1gpu-2026-11-27/host_loadcurve.json";
  const auto doc = load_json_file(path);
  const auto f = calibration::host_load_curve_fragment(doc, path).at("host");
  CHECK(f.at("series") == "with_training");
  CHECK(f.at("cpus").get<double>() == 16);
  const auto& curve = f.at("load_curve");
  REQUIRE(curve.size() == 6);  // k = 1, 2, 4, 8, 12, 16; 24 is past the 16 CPUs
  CHECK(curve[0].at("busy_fraction").get<double>() == doctest::Approx(2.0 / 16));
  CHECK(curve[0].at("cost_ratio").get<double>() == doctest::Approx(1.0));
  // 16 processes beside the trainer: 300.1 -> 3,750.1 / 16 samples/s each, 17 threads on 16 CPUs.
  CHECK(curve[5].at("busy_fraction").get<double>() == doctest::Approx(1.0));
  CHECK(curve[5].at("cost_ratio").get<double>() == doctest::Approx(300.054 / (3750.144 / 16) * 16 / 17).epsilon(0.001));
  CHECK(f.at("one_process_ms_per_sample").get<double>() == doctest::Approx(3.333).epsilon(0.001));
}
