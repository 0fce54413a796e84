// Dataset kinds (models/datasets/NAME.json): JSON text -> the checked CPU cost and bytes per sample.
#include "fuzz_common.hpp"

#include "sim/strategies/loader.hpp"
#include "sim/util/json_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  return dtsim::fuzz::expect_input_errors_only([&] {
    const auto doc = dtsim::parse_json_text(dtsim::fuzz::text_of(data, size), "fuzz.json");
    (void)dtsim::parse_dataset_kind(dtsim::JsonReader(doc, "fuzz.json"), 3 * 224 * 224);
  });
}
