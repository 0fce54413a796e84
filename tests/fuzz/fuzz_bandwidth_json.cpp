// Bandwidth logs as dtsim-bench-link JSON: text -> runs; and the whole reader, which dispatches
// on the content (JSON, CSV or text) as dtsim calibrate does.
#include "fuzz_common.hpp"

#include "calibration/bandwidth_log_detail.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const std::string text = dtsim::fuzz::text_of(data, size);
  dtsim::fuzz::expect_input_errors_only([&] {
    dtsim::calibration::detail::RunCollector runs("fuzz.json");
    dtsim::calibration::detail::read_bench_link_json(text, runs);
    (void)runs.finish();
  });
  return dtsim::fuzz::expect_input_errors_only([&] { (void)dtsim::calibration::parse_bandwidth_log(text, "fuzz.json"); });
}
