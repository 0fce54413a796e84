// Scenario -> plan without SimGrid: the topology, the model and the task graph of the strategy.
#include "fuzz_common.hpp"

#include "sim/predict/predict.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  return dtsim::fuzz::expect_input_errors_only([&] {
    const auto s =
        dtsim::parse_scenario(dtsim::parse_json_text(dtsim::fuzz::text_of(data, size), "fuzz.json"), "fuzz.json");
    (void)dtsim::plan_scenario(s);
  });
}
