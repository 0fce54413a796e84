// Compute slowed beside NCCL kernels (sim/strategies/interference.hpp): closed-form checks of the
// SM/HBM shares, the roofline split and the NCCL-stream timeline, and the invariants of a DDP run.
#include "sim/model/model.hpp"
#include "sim/predict/predict.hpp"
#include "sim/strategies/interference.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

using namespace dtsim;

namespace {

GpuSpec gpu_80_sms_900_gbs()
{
  GpuSpec g;
  g.name = "test";
  g.fp32_flops = 10e12;
  g.memory_bandwidth = 900e9;
  g.sms = 80;
  return g;
}

Layer layer(const std::string& kind, double flops, double activations)
{
  Layer l;
  l.name = kind;
  l.kind = kind;
  l.block = kind;
  l.fwd_flops = flops;
  l.activation_elems = activations;
  return l;
}

}  // namespace

TEST_CASE("SM share is channels / SMs, HBM share is 3 bytes per bus byte over HBM bandwidth")
{
  const GpuSpec g = gpu_80_sms_900_gbs();
  const InflightCollective c{1.0, 100e9, 8};  // 100 GB received in 1 s on 8 channels
  CHECK(compute_loss(c, g, 0.0) == doctest::Approx(8.0 / 80));
  CHECK(compute_loss(c, g, 1.0) == doctest::Approx(3 * 100e9 / 900e9));
  CHECK(compute_loss(c, g, 0.5) == doctest::Approx(0.5 * 0.1 + 0.5 * (1.0 / 3)));
  CHECK(compute_loss(InflightCollective{0.0, 1e9, 8}, g, 0.5) == 0.0);  // never in flight
  GpuSpec unknown = g;
  unknown.sms = 0;
  unknown.memory_bandwidth = 0;
  CHECK(compute_loss(c, unknown, 0.5) == 0.0);
}

TEST_CASE("roofline: a layer without FLOPs is memory-bound, a dense one is not")
{
  const GpuSpec g = gpu_80_sms_900_gbs();
  Model m;
  m.input_elems = 1000;
  m.layers = {layer("bn", 0, 1000)};
  CHECK(memory_bound_share(m, g, Precision::Fp32, 64) == doctest::Approx(1.0));
  m.layers = {layer("conv", 1e12, 1000)};
  CHECK(memory_bound_share(m, g, Precision::Fp32, 64) == doctest::Approx(0.0));
  // Half of each: a conv taking 1 ms of math and a BN taking 1 ms of memory traffic.
  const double bn_bytes = 64 * 2000 * 4.0;  // in + out activations, fp32
  const double bn_ms = bn_bytes / 900e9;
  m.layers = {layer("conv", bn_ms * 10e12 / 64, 1000), layer("bn", 0, 1000)};
  CHECK(memory_bound_share(m, g, Precision::Fp32, 64) == doctest::Approx(0.5).epsilon(1e-3));
}

TEST_CASE("backward beside the NCCL stream: work lost at the loss rate while a collective is in flight")
{
  const GpuSpec g = gpu_80_sms_900_gbs();
  const InflightCollective c{0.5, 0.0, 8};  // SM share only: loss 0.1 at memory_bound 0
  // Bucket 0 ready after 1 s; its collective runs 0.5 s over the next segment of 1 s:
  // 0.5 s at 90% speed costs 0.05 s.
  const auto extra = backward_slowdown({1.0, 1.0}, {c}, g, 0.0);
  REQUIRE(extra.size() == 2);
  CHECK(extra[0] == 0.0);
  CHECK(extra[1] == doctest::Approx(0.05));
  // A collective longer than what is left of backward slows all of it: 1 s of work at 90%.
  const auto covered = backward_slowdown({1.0, 1.0}, {InflightCollective{5.0, 0.0, 8}}, g, 0.0);
  CHECK(covered[1] == doctest::Approx(1.0 / 0.9 - 1.0));
  // One NCCL stream: bucket 1's collective waits for bucket 0's. Bucket 0 (in flight from t = 1 to
  // 3) covers segment 1 (0.1 s of work) and all of segment 2; bucket 1 waits for t = 3, after
  // backward is over, and slows nothing.
  const auto queued = backward_slowdown({1.0, 0.1, 1.0}, {InflightCollective{2.0, 0.0, 8}, InflightCollective{1.0, 0.0, 8}}, g, 0.0);
  CHECK(queued[1] == doctest::Approx(0.1 / 0.9 - 0.1));
  CHECK(queued[2] == doctest::Approx(1.0 / 0.9 - 1.0));
  // Nothing in flight, nothing lost.
  const auto none = backward_slowdown({1.0, 1.0}, {}, g, 0.0);
  CHECK(none[1] == 0.0);
}

TEST_CASE("a DDP run: the slowdown is part of compute, every GPU count above one has it, one GPU has none")
{
  auto doc = [](int gpus) {
    return nlohmann::json{{"cluster", "dgx1-v100"},
                          {"model", "resnet50"},
                          {"training",
                           {{"dataset_samples", 1281167}, {"batch_per_gpu", 64}, {"epochs", 1}, {"precision", "fp32"},
                            {"compute", {{"single_gpu_throughput", 360}}}, {"loader", {{"dataset", "synthetic"}}}}},
                          {"strategy", {{"kind", "ddp"}}},
                          {"gpus", gpus},
                          {"simulation", {{"iterations", 3}, {"warmup", 1}}}};
  };
  const Prediction one = predict(parse_scenario(doc(1), "one.json"));
  CHECK(one.result.nccl_slowdown_s == 0.0);
  const Prediction eight = predict(parse_scenario(doc(8), "eight.json"));
  CHECK(eight.result.nccl_slowdown_s > 0.0);
  CHECK(eight.result.nccl_slowdown_s < 0.05 * eight.result.compute_time_s);  // a 102 MB AllReduce on NVLink
  CHECK(eight.result.compute_time_s > one.result.compute_time_s + eight.result.nccl_slowdown_s * 0.999);
  CHECK(eight.result.iteration_time_s >= eight.result.compute_time_s);
}
