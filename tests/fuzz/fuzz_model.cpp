// Model files: JSON text -> layer table.
#include "fuzz_common.hpp"

#include "sim/model/model.hpp"
#include "sim/util/json_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  return dtsim::fuzz::expect_input_errors_only([&] {
    const dtsim::Model m = dtsim::parse_model(dtsim::parse_json_text(dtsim::fuzz::text_of(data, size), "fuzz.json"), "fuzz.json");
    (void)m.params();
    (void)m.fwd_flops();
  });
}
