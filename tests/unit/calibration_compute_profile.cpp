// Compute profiles (dtsim-bench-compute, profile_model.py) and the calibration "compute" fragment.
#include "calibration/compute_profile.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

using namespace dtsim::calibration;

namespace {
const std::string kDir = std::string(DTSIM_TESTS_DIR) + "/data/calibration/compute/";
}

TEST_CASE("GEMM sweep and model profile combine into one fragment")
{
  const auto p = load_compute_profile({kDir + "bench_compute_sample.json", kDir + "profile_toymodel_sample.json"});
  CHECK(p.gpu == "NVIDIA A100-SXM4-80GB");
  REQUIRE(p.kernels.size() == 6);
  CHECK(p.kernels[1].tflops() == doctest::Approx(1099511627776.0 / 0.0610 / 1e12));
  // A100 peaks: 19.5 TFLOP/s FP32, 156 TF32, 312 FP16/BF16 (dense).
  const PeakFlops peak = {{"fp32", 19.5e12}, {"tf32", 156e12}, {"fp16", 312e12}, {"bf16", 312e12}};
  const auto f = compute_fragment(p, peak, std::vector<std::string>{"net1", "relu", "net2"});
  CHECK(f.at("gpu") == "NVIDIA A100-SXM4-80GB");
  // Best of the two FP32 sizes: 8192^3 at 61.0 ms = 18.02 TFLOP/s.
  CHECK(f.at("gemm_tflops").at("fp32").get<double>() == doctest::Approx(18.025).epsilon(0.001));
  CHECK(f.at("gemm_tflops").at("fp16").get<double>() == doctest::Approx(249.89).epsilon(0.001));
  CHECK(f.at("efficiency").at("fp32").get<double>() == doctest::Approx(18.025 / 19.5).epsilon(0.001));
  CHECK(f.at("efficiency").at("bf16").get<double>() == doctest::Approx(244.34 / 312).epsilon(0.001));
  CHECK(f.at("conv_tflops").at("fp16").get<double>() == doctest::Approx(164.42).epsilon(0.001));
  REQUIRE(f.at("layers").size() == 3);
  CHECK(f.at("layers")[2].at("name") == "net2");
  CHECK(f.at("layers")[0].at("bwd_s").get<double>() == doctest::Approx(2.5e-5));
  CHECK(f.at("model").at("fwd_s").get<double>() == doctest::Approx(2.9e-5));
  CHECK(f.at("model").at("batch") == 20);
  CHECK(!f.contains("missing_layers"));
}

TEST_CASE("layer names are checked against the model's layer table")
{
  const auto p = load_compute_profile({kDir + "profile_toymodel_sample.json"});
  const auto f = compute_fragment(p, {}, std::vector<std::string>{"net1", "relu", "net2", "net3"});
  CHECK(f.at("missing_layers") == nlohmann::json::array({"net3"}));
  CHECK(!f.contains("efficiency"));
  CHECK_THROWS_AS(compute_fragment(p, {}, std::vector<std::string>{"net1"}), dtsim::InputError);
}

TEST_CASE("bad compute profiles: file, JSON pointer and what was expected")
{
  ComputeProfile p;
  auto doc = nlohmann::json::parse(R"({"tool":"dtsim-bench-compute","schema_version":1,"gpu":{"name":"X"},
    "kernels":[{"kind":"gemm","precision":"fp64","flops":1,"median_s":1}]})");
  try {
    read_compute_profile(doc, "k.json", p);
    FAIL("expected an InputError");
  } catch (const dtsim::InputError& e) {
    CHECK(e.pointer() == "/kernels/0/precision");
  }
  doc = nlohmann::json::parse(R"({"tool":"dtsim-bench-compute","schema_version":1,"gpu":{"name":"X"},
    "kernels":[{"kind":"gemm","precision":"fp32","flops":1,"median_s":1,"min_s":2}]})");
  CHECK_THROWS_AS(read_compute_profile(doc, "k.json", p), dtsim::InputError);
  ComputeProfile q;
  q.gpu = "Y";
  q.file = "other.json";
  doc = nlohmann::json::parse(R"({"tool":"dtsim-profile-model","schema_version":1,"gpu":{"name":"X"}})");
  CHECK_THROWS_AS(read_compute_profile(doc, "k.json", q), dtsim::InputError);
}
