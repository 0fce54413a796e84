// --set: each input line is one key.path=value, applied to a valid scenario, which is then read.
#include "fuzz_common.hpp"

#include "sim/scenario/scenario.hpp"

#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  static const nlohmann::json base = nlohmann::json::parse(R"({
    "cluster": {"base": "pcie-box", "gpus_per_node": 4},
    "model": "resnet50",
    "training": {"dataset_samples": 1000, "batch_per_gpu": 32, "epochs": 1,
                 "compute": {"single_gpu_throughput": 300}},
    "strategy": {"kind": "ddp"}, "gpus": 4})");
  return dtsim::fuzz::expect_input_errors_only([&] {
    std::vector<dtsim::Override> overrides;
    std::istringstream in(dtsim::fuzz::text_of(data, size));
    for (std::string line; std::getline(in, line);)
      overrides.push_back(dtsim::parse_override(line));
    nlohmann::json doc = base;
    dtsim::apply_overrides(doc, overrides);
    dtsim::parse_scenario(doc, "base.json");
  });
}
