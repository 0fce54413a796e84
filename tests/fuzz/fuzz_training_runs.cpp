// Runs CSVs (dtsim validate RUNS.csv): CSV text -> checked rows -> each row's scenario parsed.
#include "fuzz_common.hpp"

#include "sim/predict/training_runs.hpp"
#include "sim/scenario/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  return dtsim::fuzz::expect_input_errors_only([&] {
    const auto rows = dtsim::read_training_runs(dtsim::fuzz::text_of(data, size), "tests/data/training/fuzz.csv");
    for (std::size_t i = 0; i < rows.size() && i < 4; ++i)
      (void)dtsim::parse_training_run(rows[i]);
  });
}
