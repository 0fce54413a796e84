// Calibration files: JSON text -> checked calibration, its NCCL parameters, applied to a preset.
#include "fuzz_common.hpp"

#include "calibration/calibration_file.hpp"
#include "sim/topology/topology_builder.hpp"
#include "sim/util/json_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  static const dtsim::Topology preset = dtsim::load_topology("dgx1-v100");
  return dtsim::fuzz::expect_input_errors_only([&] {
    dtsim::CalibrationFile c;
    c.path = "fuzz.json";
    c.json = dtsim::parse_json_text(dtsim::fuzz::text_of(data, size), c.path);
    dtsim::CalibrationFile::check(c.json, c.path);
    (void)c.nccl_params(70);
    dtsim::Topology t = preset;
    dtsim::apply_calibration(t, c);
  });
}
