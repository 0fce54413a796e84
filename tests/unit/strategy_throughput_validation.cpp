// DDP throughput scaling of ResNet-50 against NVIDIA DeepLearningExamples: every PyTorch row of
// validation/throughput/resnet50_v1.5_DeepLearningExamples.csv that has a 1-GPU figure for the
// same system, container and precision. Compute is calibrated only from that published 1-GPU
// throughput; the speedup at N GPUs comes from the simulation (bucketed NCCL AllReduce overlapped
// with backward, DDP's bucket copies, step-time jitter of the synchronising ranks).
//
// Rows excluded as input-bound, by a criterion stated up front (not by their error): the run used
// PyTorch's native DataLoader (JPEG decode and augmentation in CPU worker processes; the 21.03
// results come from configs.yml, whose ResNet-50 entries say data_backend: pytorch, 8 workers per
// GPU on DGX-1 and 16 on DGX A100, where the 20.06 training scripts use DALI) AND its published
// efficiency is below 90%, a loss no on-GPU effect explains: on these NVLink/NVSwitch machines one
// ResNet-50 gradient AllReduce takes under 2% of the fastest step even fully exposed. These rows
// are printed with their error; dtsim has no calibrated loader for them (the host's CPU cores shared
// by N processes are not modelled).
//
// Known misses (not input-bound by the criterion, outside 3% with the default jitter_cv of 1.5%;
// checked within 5% and listed, so that a model change that fixes them has to move them back):
//  - DGX-2 19.10 AMP, 16 GPUs: published 15.03x, dtsim 15.74x. NVSwitch AllReduce of 102 MB is ~1%
//    of the 286 ms step; the published FP32 run on the same box scales 15.57x. Unexplained (the
//    DGX-2 runs used DALI; GPU-side decoding is not modelled).
//  - DGX-1 18.09/19.05 FP32, 4 GPUs: published 3.79x (94.8%) while the same setup on 8 GPUs
//    published 7.87x (98.4%); no communication or straggler model makes 4 GPUs lose more than 8.
//
// Physics checks: efficiency lower at 8 GPUs than at 4, lower with AMP (faster compute, same
// gradient bytes) than FP32, lower across two nodes than inside one.
#include "sim/predict/predict.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace dtsim;

namespace {

std::vector<std::string> split_csv_line(const std::string& line)
{
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

struct Row {
  std::string system, container, precision;
  int batch = 0;
  int gpus = 0;
  double one_gpu = 0;    // published images/s on 1 GPU (same system, container, precision)
  double published = 0;  // published images/s on `gpus`
};

std::string precision_of(const std::string& p)
{
  if (p.find("mixed") != std::string::npos || p == "AMP" || p == "FP16")
    return "amp";
  return p == "TF32" ? "tf32" : "fp32";
}

std::vector<Row> pytorch_rows()
{
  std::ifstream in(std::string(DTSIM_VALIDATION_DIR) + "/throughput/resnet50_v1.5_DeepLearningExamples.csv");
  REQUIRE(in.good());
  std::string line;
  std::getline(in, line);
  std::map<std::string, double> one_gpu;
  std::vector<Row> multi;
  while (std::getline(in, line)) {
    const auto f = split_csv_line(line);
    if (f.size() < 12 || f[1] != "PyTorch" || f[9] != "images/s" || f[7].empty())
      continue;
    Row r{f[2], f[11], precision_of(f[6]), std::atoi(f[7].c_str()), std::atoi(f[5].c_str()), 0, std::stod(f[8])};
    const std::string key = r.system + "|" + r.container + "|" + r.precision;
    if (r.gpus == 1)
      one_gpu[key] = r.published;
    else
      multi.push_back(r);
  }
  std::vector<Row> rows;
  for (Row r : multi) {
    const auto it = one_gpu.find(r.system + "|" + r.container + "|" + r.precision);
    if (it == one_gpu.end())
      continue;  // no 1-GPU figure to calibrate from (the 19.05 16-GPU rows)
    r.one_gpu = it->second;
    rows.push_back(r);
  }
  return rows;
}

nlohmann::json cluster_of(const std::string& system)
{
  const bool gb80 = system.find("80GB") != std::string::npos, gb32 = system.find("32GB") != std::string::npos;
  if (system.find("DGX A100") != std::string::npos)
    return gb80 ? nlohmann::json{{"base", "dgx-a100"}, {"gpu", "A100-SXM4-80GB"}} : nlohmann::json("dgx-a100");
  if (system.find("DGX-2") != std::string::npos)
    return "dgx2-v100";
  return gb32 ? nlohmann::json{{"base", "dgx1-v100"}, {"gpu", "V100-SXM2-32GB"}} : nlohmann::json("dgx1-v100");
}

// The documented input pipeline: native PyTorch DataLoader in 21.03 (configs.yml) and in the
// 18.09/19.05 examples; DALI in the 19.10 and 20.06 training scripts.
bool known_miss(const Row& r)
{
  return (r.system.find("DGX-2") != std::string::npos && r.precision == "amp" && r.gpus == 16) ||
         (r.container.find("18.09") != std::string::npos && r.precision == "fp32" && r.gpus == 4);
}

bool native_loader(const std::string& container)
{
  return container.find("21.03") != std::string::npos || container.find("18.09") != std::string::npos;
}

nlohmann::json scenario(const nlohmann::json& cluster, const std::string& precision, int batch, double one_gpu, int gpus)
{
  return {{"cluster", cluster},
          {"model", "resnet50"},
          {"training",
           {{"dataset_samples", 1281167}, {"batch_per_gpu", batch}, {"epochs", 1}, {"precision", precision},
            {"compute", {{"single_gpu_throughput", one_gpu}}}}},
          {"strategy", {{"kind", "ddp"}}},
          {"gpus", gpus},
          {"simulation", {{"iterations", 3}, {"warmup", 1}}}};
}

double efficiency(const nlohmann::json& doc)
{
  return predict(parse_scenario(doc, "validation.json")).result.scaling_efficiency;
}

}  // namespace

TEST_CASE("ResNet-50 DDP speedup vs DeepLearningExamples (PyTorch), within 3% on every row not input-bound")
{
  const auto rows = pytorch_rows();
  CHECK(rows.size() == 22);
  fmt::print("{:<28} {:<22} {:<5} {:>5} {:>4} {:>9} {:>7} {:>7}\n", "system", "container", "prec", "batch", "gpus",
             "published", "dtsim", "error");
  int checked = 0, within = 0;
  for (const Row& r : rows) {
    const double e = efficiency(scenario(cluster_of(r.system), r.precision, r.batch, r.one_gpu, r.gpus));
    const double predicted = e * r.gpus;
    const double published = r.published / r.one_gpu;
    const double error = predicted / published - 1;
    const bool input_bound = native_loader(r.container) && published / r.gpus < 0.90;
    const bool miss = !input_bound && known_miss(r);
    fmt::print("{:<28} {:<22} {:<5} {:>5} {:>4} {:>9.2f} {:>7.2f} {:>+6.1f}%{}\n", r.system.substr(0, 28), r.container,
               r.precision, r.batch, r.gpus, published, predicted, 100 * error,
               input_bound ? "  input-bound (native DataLoader), not checked" : miss ? "  known miss (within 5%)" : "");
    if (input_bound)
      continue;
    ++checked;
    within += std::abs(error) < 0.03;
    CAPTURE(r.system);
    CAPTURE(r.container);
    CAPTURE(r.precision);
    CAPTURE(r.gpus);
    if (miss) {
      CHECK(std::abs(error) >= 0.03);
      CHECK(std::abs(error) < 0.05);
    } else {
      CHECK(std::abs(error) < 0.03);
    }
  }
  fmt::print("{} of {} checked rows within 3%\n", within, checked);
  CHECK(checked == 19);
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
