// GPU kinds: published dense peaks, aliases, unknown names.
#include "sim/topology/gpu_spec.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

using namespace dtsim;

TEST_CASE("published peaks and memory")
{
  const GpuSpec v100 = gpu_spec("V100");
  CHECK(v100.name == "V100-SXM2");
  CHECK(v100.fp16_flops == doctest::Approx(125e12));
  CHECK(v100.fp32_flops == doctest::Approx(15.7e12));
  CHECK(v100.compute_capability == 70);
  CHECK(v100.memory_bytes == doctest::Approx(16.0 * (1 << 30)));
  CHECK(gpu_spec("V100-SXM2-32GB").memory_bytes == doctest::Approx(32.0 * (1 << 30)));
  CHECK(gpu_spec("v100-sxm2-16gb").name == "V100-SXM2");

  const GpuSpec a100 = gpu_spec("A100");
  CHECK(a100.tf32_flops == doctest::Approx(156e12));
  CHECK(a100.peak_flops(Precision::Bf16) == doctest::Approx(312e12));
  CHECK(gpu_spec("A100-SXM4-80GB").memory_bytes == doctest::Approx(79.35 * (1 << 30)));

  CHECK(gpu_spec("H100-SXM").peak_flops(Precision::Amp) == doctest::Approx(989.4e12));
  CHECK(gpu_spec("RTX-4090").memory_bytes == doctest::Approx(24.0 * (1 << 30)));
  CHECK(gpu_spec("RTX-2080Ti").compute_capability == 75);

  // H200: the total measured on one (calibration/measured/h200-1gpu-2026-11-27/memory_peaks.json,
  // "total_bytes"; 139.8 GiB), not the datasheet's 141e9 bytes (131.3 GiB).
  CHECK(gpu_spec("H200").memory_bytes == doctest::Approx(150109880320.0));
  CHECK(gpu_spec("H200").memory_bytes / (1 << 30) == doctest::Approx(139.8).epsilon(0.001));

  const GpuSpec b200 = gpu_spec("B200-SXM");
  CHECK(b200.name == "B200");
  CHECK(b200.peak_flops(Precision::Bf16) == doctest::Approx(2250e12));
  CHECK(b200.peak_flops(Precision::Tf32) == doctest::Approx(1100e12));
  CHECK(b200.memory_bytes == doctest::Approx(180e9));
  CHECK(b200.memory_bandwidth == doctest::Approx(8000e9));
  CHECK(b200.compute_capability == 100);
  CHECK(b200.sms == 148);
}

TEST_CASE("precisions without a fast path fall back to FP32")
{
  const GpuSpec v100 = gpu_spec("V100-SXM2");
  CHECK(v100.peak_flops(Precision::Tf32) == doctest::Approx(v100.fp32_flops));
  CHECK(v100.peak_flops(Precision::Bf16) == doctest::Approx(v100.fp32_flops));
  const GpuSpec p40 = gpu_spec("P40");
  CHECK(p40.peak_flops(Precision::Amp) == doctest::Approx(p40.fp32_flops));
}

TEST_CASE("unknown GPU kind is an input error naming file and pointer")
{
  try {
    gpu_spec("V200", "x.json", "/gpu");
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.file() == "x.json");
    CHECK(e.pointer() == "/gpu");
    CHECK(std::string(e.what()).find("V100-SXM2") != std::string::npos);
  }
  CHECK(gpu_names().size() >= 12);
}
