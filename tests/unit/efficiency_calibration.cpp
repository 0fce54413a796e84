// compute=efficiency=calibrate (efficiency_calibration.hpp, training_runs.hpp): the solver against
// rates whose root is known in closed form, then through a runs CSV: the found efficiency
// reproduces the row's measurement, a row judged against it runs at it, and what cannot be
// calibrated is an error naming the CSV, the line and the column. Then rows left unmeasured (blank
// measured and unit): predicted from the calibration, judged on nothing.
#include "sim/predict/efficiency_calibration.hpp"
#include "sim/predict/training_runs.hpp"

#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace dtsim;

TEST_CASE("calibrate_efficiency: the root of rate(e) = measured, to its tolerance")
{
  // Compute-bound: rate proportional to e; the first guess is the root.
  auto fit = calibrate_efficiency([](double e) { return 200 * e; }, 70);
  CHECK(fit.outcome == EfficiencyFit::Outcome::Found);
  CHECK(fit.efficiency == doctest::Approx(0.35).epsilon(1e-5));
  CHECK(fit.simulations <= 3);

  // A fixed communication time beside compute: iteration = 1 / e + 0.5 s, one sample each; the
  // measured 1.6 samples/s is met at e = 1 / (1 / 1.6 - 0.5) = 8 -> beyond 1; 0.8 at e = 1 / 0.75.
  const auto with_comm = [](double e) { return 1 / (1 / e + 0.5); };
  fit = calibrate_efficiency(with_comm, 0.4);  // 1 / 0.4 - 0.5 = 2 -> e = 0.5
  CHECK(fit.outcome == EfficiencyFit::Outcome::Found);
  CHECK(fit.efficiency == doctest::Approx(0.5).epsilon(1e-5));
  CHECK(fit.simulations <= 12);

  fit = calibrate_efficiency(with_comm, 1.6);
  CHECK(fit.outcome == EfficiencyFit::Outcome::AboveHighest);
  CHECK(fit.efficiency == kHighestEfficiency);
  CHECK(fit.rate == doctest::Approx(1 / 1.5));

  fit = calibrate_efficiency([](double e) { return 200 * e; }, 0.1);  // e = 5e-4 < 1e-3
  CHECK(fit.outcome == EfficiencyFit::Outcome::BelowLowest);
  CHECK(fit.efficiency == kLowestEfficiency);
  CHECK(fit.rate == doctest::Approx(0.2));

  // The efficiency found is one the rate was simulated at (validate keeps that prediction), the one
  // whose rate came nearest the measurement.
  std::vector<double> called;
  fit = calibrate_efficiency([&](double e) { called.push_back(e); return with_comm(e); }, 0.4);
  CHECK(std::find(called.begin(), called.end(), fit.efficiency) != called.end());
  for (const double e : called)
    CHECK(std::fabs(std::log(with_comm(e) / 0.4)) >= std::fabs(std::log(fit.rate / 0.4)));
  CHECK(static_cast<int>(called.size()) == fit.simulations);

  // A rate that is not smooth (steps of a discrete simulation): still a root inside the step.
  fit = calibrate_efficiency([](double e) { return std::floor(1000 * e) / 10; }, 42.05);
  CHECK(fit.outcome == EfficiencyFit::Outcome::Found);
  CHECK(fit.efficiency == doctest::Approx(0.421).epsilon(2e-3));
}

namespace {

const std::string kHeader = "id,baseline,cluster,gpu,nodes,gpus,model,precision,micro_batch,global_batch,strategy,"
                            "compute,measured,unit\n";

/// validate_training_runs on `csv`, written to a temporary file; the InputError's problem or "".
std::vector<TrainingRun> validate_text(const std::string& csv, std::string* problem = nullptr)
{
  const auto path = std::filesystem::temp_directory_path() / fmt::format("dtsim-calibrate-{}.csv", ::getpid());
  {
    std::ofstream(path) << csv;
  }
  std::vector<TrainingRun> runs;
  try {
    runs = validate_training_runs(path.string());
  } catch (const InputError& e) {
    CHECK(e.file() == path.string());
    if (problem)
      *problem = e.problem();
    else
      FAIL(e.what());
  }
  std::filesystem::remove(path);
  return runs;
}

std::string problem_of(const std::string& csv)
{
  std::string problem = "no error";
  (void)validate_text(csv, &problem);
  return problem;
}

}  // namespace

TEST_CASE("efficiency=calibrate: a baseline meets its measurement, the rows judged against it take its efficiency")
{
  // The measurement: dtsim's own rate at efficiency 0.4 on one node of 8 A100 with DDP.
  const auto given = validate_text(kHeader + "m,,dgx-a100,A100-SXM4-80GB,1,2,gpt2,bf16,8,16,ddp,efficiency=0.4,1,samples/s\n");
  REQUIRE(given.size() == 1);
  CHECK_FALSE(given[0].efficiency_calibrated);
  CHECK(given[0].efficiency == 0.4);
  const double measured = given[0].predicted_rate;

  const auto runs = validate_text(
      kHeader + fmt::format("a,,dgx-a100,A100-SXM4-80GB,1,2,gpt2,bf16,8,16,ddp,efficiency=calibrate,{},samples/s\n"
                            "b,a,dgx-a100,A100-SXM4-80GB,1,4,gpt2,bf16,8,32,ddp,efficiency=calibrate,{},samples/s\n",
                            measured, 1.9 * measured));
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].efficiency_calibrated);
  CHECK(runs[0].efficiency == doctest::Approx(0.4).epsilon(1e-4));
  CHECK(runs[0].predicted_rate == doctest::Approx(measured).epsilon(1e-4));
  CHECK(runs[0].calibration_simulations > 1);
  CHECK_FALSE(runs[1].efficiency_calibrated);
  CHECK(runs[1].efficiency == runs[0].efficiency);

  // The same as the efficiency written out (what tests/data/training/find_efficiencies.py did).
  const auto written = validate_text(
      kHeader + fmt::format("a,,dgx-a100,A100-SXM4-80GB,1,2,gpt2,bf16,8,16,ddp,efficiency={},{},samples/s\n"
                            "b,a,dgx-a100,A100-SXM4-80GB,1,4,gpt2,bf16,8,32,ddp,efficiency={},{},samples/s\n",
                            runs[0].efficiency, measured, runs[0].efficiency, 1.9 * measured));
  CHECK(written[1].error == doctest::Approx(runs[1].error).epsilon(1e-9));
  CHECK(format_training_runs(runs).find("# a: compute efficiency 0.4000 calibrated on its measured") != std::string::npos);
}

TEST_CASE("efficiency=calibrate: what cannot be calibrated names the CSV, the line and the column")
{
  const std::string row = "a,,dgx-a100,A100-SXM4-80GB,1,8,gpt2,bf16,8,64,ddp,efficiency=calibrate,";
  // Beyond the GPU: a thousand times the rate at efficiency 1.
  CHECK(problem_of(kHeader + row + "1e9,samples/s\n")
            .rfind("line 2, column compute: efficiency=calibrate found no efficiency from 0.001 to 1 that meets the "
                   "measured 1e+09 samples/s: at efficiency 1 dtsim gives ",
                   0) == 0);
  CHECK(problem_of(kHeader + row + "1e-6,samples/s\n")
            .rfind("line 2, column compute: efficiency=calibrate found no efficiency from 0.001 to 1 that meets the "
                   "measured 1e-06 samples/s: at efficiency 0.001 dtsim gives ",
                   0) == 0);
  // A time without its global batch is for work the row does not state.
  CHECK(problem_of("id,baseline,cluster,gpu,nodes,gpus,model,precision,batch_per_gpu,strategy,compute,measured,unit\n"
                   "a,,dgx-a100,A100-SXM4-80GB,1,8,gpt2,bf16,8,ddp,efficiency=calibrate,2.5,s\n") ==
        "line 2, column compute: expected a rate to calibrate the efficiency on: unit samples/s, or a time with its "
        "global_batch (a time alone is for work this row does not state)");
  // A baseline measured on one GPU's throughput has no efficiency to give.
  CHECK(problem_of(kHeader + "a,,dgx-a100,A100-SXM4-80GB,1,8,gpt2,bf16,8,64,ddp,throughput=100,700,samples/s\n"
                             "b,a,dgx-a100,A100-SXM4-80GB,2,16,gpt2,bf16,8,128,ddp,efficiency=calibrate,1300,samples/s\n") ==
        "line 3, column compute: expected a baseline whose compute is an efficiency to take (efficiency=F or "
        "efficiency=calibrate), got the baseline 'a' with compute=throughput=100");
  CHECK(problem_of(kHeader + "a,,dgx-a100,A100-SXM4-80GB,1,8,gpt2,bf16,8,64,ddp,efficiency=some,700,samples/s\n") ==
        "line 2, column compute: expected efficiency=F with F from 0.001 to 1, or efficiency=calibrate, got "
        "'efficiency=some'");
}

TEST_CASE("a row without a measurement is predicted from its baseline's calibration and judged on nothing")
{
  const auto runs = validate_text(
      kHeader + "a,,dgx-a100,A100-SXM4-80GB,1,2,gpt2,bf16,8,16,ddp,efficiency=calibrate,180,samples/s\n"
                "b,a,dgx-a100,A100-SXM4-80GB,1,8,gpt2,bf16,8,64,ddp,efficiency=calibrate,,\n"
                "c,a,dgx-a100,A100-SXM4-80GB,1,4,gpt2,bf16,8,32,ddp,efficiency=calibrate,350,samples/s\n"
                "d,b,dgx-a100,A100-SXM4-80GB,2,16,gpt2,bf16,8,128,ddp,efficiency=calibrate,1300,samples/s\n");
  REQUIRE(runs.size() == 4);
  CHECK(runs[1].measured_rate == 0);
  CHECK_FALSE(runs[1].compared);
  CHECK(runs[1].efficiency == runs[0].efficiency);  // the calibration carries through an unmeasured row
  CHECK(runs[3].efficiency == runs[0].efficiency);
  CHECK(runs[1].predicted_ratio == doctest::Approx(runs[1].predicted_rate / runs[0].predicted_rate));
  CHECK(runs[1].predicted_ratio > 3);  // 8 GPUs against 2, DDP on gpt2
  CHECK(runs[2].compared);
  CHECK_FALSE(runs[3].compared);  // measured, but against a baseline that is not
  const AbsErrorSummary e = compared_errors(runs);
  CHECK(e.count == 1);
  CHECK(e.worst == doctest::Approx(std::abs(runs[2].error)));
  const std::string text = format_training_runs(runs);
  CHECK(text.find("# b: not measured; dtsim ") != std::string::npos);
  CHECK(text.find(" x its baseline a, fits (") != std::string::npos);
  CHECK(text.find("# d: its baseline b is not measured; dtsim ") != std::string::npos);
  CHECK(text.find("# 1 compared rows: median") != std::string::npos);

  // Calibrating needs the measurement; a measured figure needs its unit.
  CHECK(problem_of(kHeader + "a,,dgx-a100,A100-SXM4-80GB,1,8,gpt2,bf16,8,64,ddp,efficiency=calibrate,,\n") ==
        "line 2, column measured: expected the measured rate to calibrate the efficiency on (efficiency=calibrate on a "
        "row without a baseline), got an empty cell");
  CHECK(problem_of(kHeader + "a,,dgx-a100,A100-SXM4-80GB,1,8,gpt2,bf16,8,64,ddp,efficiency=0.5,700,\n") ==
        "line 2, column unit: expected 'samples/s', 's', 'tokens/s' or 'tokens/s/gpu', got ''");
  CHECK(problem_of(kHeader + "a,,dgx-a100,A100-SXM4-80GB,1,8,gpt2,bf16,8,64,ddp,efficiency=0.5,,samples/s\n") ==
        "line 2, column measured: expected the measured figure in samples/s (or measured and unit both blank: a run "
        "to predict, not measured), got an empty cell");
}
