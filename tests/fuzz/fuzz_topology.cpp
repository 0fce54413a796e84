// Topology files: JSON text -> topology graph, with its checks and its bisection bandwidth.
#include "fuzz_common.hpp"

#include "sim/topology/topology_analysis.hpp"
#include "sim/topology/topology_builder.hpp"
#include "sim/topology/topology_check.hpp"
#include "sim/util/json_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  return dtsim::fuzz::expect_input_errors_only([&] {
    const auto doc = dtsim::parse_json_text(dtsim::fuzz::text_of(data, size), "fuzz.json");
    const dtsim::Topology t = dtsim::build_topology(dtsim::JsonReader(doc, "fuzz.json"));
    (void)dtsim::topology_problems(t);
    (void)dtsim::bisection_bandwidth(t);
  });
}
