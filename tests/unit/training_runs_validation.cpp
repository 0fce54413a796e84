// `dtsim validate RUNS.csv` on every public measured run the repository keeps
// (tests/data/training/runs.csv): NVIDIA DeepLearningExamples ResNet-50 DDP speedups (1-16 GPUs),
// the DataParallel vs DDP comparisons of tczhangzhi/pytorch-distributed and Hugging Face, and the
// seed's table. Targets (issue 14): every DataParallel row slower than its DDP baseline, with the
// predicted DP/DDP ratio within 25% of the measured one; DDP speedups within 3%, except the known
// misses below, which are held within their present error so that a change that moves them shows.
//
// Known misses: the pytorch-21.03 AMP rows on 8 GPUs (native DataLoader, 8 workers per GPU on a
// DGX-1, 16 on a DGX A100) scale 6.7-7.0x as published; dtsim predicts 7.5x. The host's cores are
// shared (the DGX-1 is predicted 31% oversubscribed) but the published loss is larger; what is not
// modelled: CPU clocks under all-core load, memory bandwidth of 64-128 workers, the pin-memory
// thread and Python launch overhead of each process. FP32/TF32 rows of the same runs hold within 1%.
#include "sim/predict/training_runs.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <string>

using namespace dtsim;

TEST_CASE("measured training runs: DP/DDP ratios within 25%, DDP speedups within 3% (known misses listed)")
{
  const auto runs = validate_training_runs(std::string(DTSIM_TESTS_DIR) + "/data/training/runs.csv");
  fmt::print("{}", format_training_runs(runs));
  int dp = 0, ddp = 0;
  for (const auto& r : runs) {
    if (r.baseline.empty())
      continue;
    CAPTURE(r.id);
    if (r.id.find("-dp-") != std::string::npos) {
      ++dp;
      CHECK(r.measured_ratio < 1);
      CHECK(r.predicted_ratio < 1);  // DataParallel slower than DDP
      CHECK(std::abs(r.error) < 0.25);
    } else if (r.id.find("21.03-amp-8gpu") != std::string::npos) {
      CHECK(r.error > 0.03);  // known miss: over-predicted
      CHECK(r.error < 0.12);
    } else {
      ++ddp;
      CHECK(std::abs(r.error) < 0.03);
    }
  }
  CHECK(dp == 3);
  CHECK(ddp == 19);
}
