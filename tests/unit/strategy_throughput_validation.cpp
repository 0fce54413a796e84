// Physics of DDP scaling (ResNet-50, compute calibrated from one V100's throughput, input on the
// GPU so that only communication and stragglers cost): efficiency lower at 8 GPUs than at 4, lower
// with AMP (faster compute, same gradient bytes) than FP32, lower across two nodes than inside one.
// The comparison with measured runs is tests/unit/training_runs_validation.cpp.
#include "sim/predict/predict.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace dtsim;

namespace {

nlohmann::json scenario(const nlohmann::json& cluster, const std::string& precision, int batch, double one_gpu, int gpus)
{
  return {{"cluster", cluster},
          {"model", "resnet50"},
          {"training",
           {{"dataset_samples", 1281167}, {"batch_per_gpu", batch}, {"epochs", 1}, {"precision", precision},
            {"compute", {{"single_gpu_throughput", one_gpu}}}, {"loader", {{"dataset", "synthetic"}}}}},
          {"strategy", {{"kind", "ddp"}}},
          {"gpus", gpus},
          {"simulation", {{"iterations", 3}, {"warmup", 1}}}};
}

double efficiency(const nlohmann::json& doc)
{
  return predict(parse_scenario(doc, "validation.json")).result.scaling_efficiency;
}

}  // namespace

TEST_CASE("scaling physics: 8 GPUs below 4, AMP below FP32, two nodes below one")
{
  const double fp32_4 = efficiency(scenario("dgx1-v100", "fp32", 128, 363.1, 4));
  const double fp32_8 = efficiency(scenario("dgx1-v100", "fp32", 128, 363.1, 8));
  const double amp_8 = efficiency(scenario("dgx1-v100", "amp", 128, 3 * 363.1, 8));  // ~3x faster compute, same bytes
  const nlohmann::json two_nodes = {{"base", "dgx1-v100"}, {"nodes", 2}};
  const double fp32_16 = efficiency(scenario(two_nodes, "fp32", 128, 363.1, 16));
  fmt::print("efficiency: fp32 4 GPUs {:.4f}, 8 GPUs {:.4f}, amp 8 GPUs {:.4f}, fp32 2 nodes x 8 {:.4f}\n", fp32_4,
             fp32_8, amp_8, fp32_16);
  CHECK(fp32_8 < fp32_4);
  CHECK(amp_8 < fp32_8);
  CHECK(fp32_16 < fp32_8);
}
