// Scenario files: JSON text -> Scenario.
#include "fuzz_common.hpp"

#include "sim/scenario/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  return dtsim::fuzz::expect_input_errors_only(
      [&] { dtsim::parse_scenario(dtsim::parse_json_text(dtsim::fuzz::text_of(data, size), "fuzz.json"), "fuzz.json"); });
}
