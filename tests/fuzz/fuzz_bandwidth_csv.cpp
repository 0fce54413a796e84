// Bandwidth logs as CSV tables with named columns: lines -> runs.
#include "fuzz_common.hpp"

#include "calibration/bandwidth_log_detail.hpp"

#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  return dtsim::fuzz::expect_input_errors_only([&] {
    std::vector<std::string> lines;
    std::istringstream in(dtsim::fuzz::text_of(data, size));
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    dtsim::calibration::detail::RunCollector runs("fuzz.csv");
    (void)dtsim::calibration::detail::read_csv_table(lines, runs);
    (void)runs.finish();
  });
}
