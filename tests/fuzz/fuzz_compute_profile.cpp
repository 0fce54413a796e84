// Compute profiles (profile_model.py / dtsim-bench-compute JSON) as dtsim calibrate reads them.
#include "fuzz_common.hpp"

#include "calibration/compute_profile.hpp"
#include "sim/util/json_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  return dtsim::fuzz::expect_input_errors_only([&] {
    const auto doc = dtsim::parse_json_text(dtsim::fuzz::text_of(data, size), "fuzz.json");
    dtsim::calibration::ComputeProfile profile;
    dtsim::calibration::read_compute_profile(doc, "fuzz.json", profile);
  });
}
