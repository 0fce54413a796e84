// Bandwidth logs in the text formats (p2pBandwidthLatencyTest, nvbandwidth, bandwidthTest,
// GPUInspector.jl, nvidia-smi topo -m): lines -> runs.
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
    dtsim::calibration::detail::RunCollector runs("fuzz.txt");
    dtsim::calibration::detail::read_text_formats(lines, runs);
    (void)runs.finish();
  });
}
