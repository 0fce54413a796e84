// The per-GPU sections of the text and JSON reports: memory (and whether it fits), bytes sent and
// received, busy and idle time (GPU0 as DataParallel's hub, a pipeline's bubble).
#pragma once

#include "sim/report/results.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace dtsim {

std::string memory_text(const RunResult& r);

/// One phrase for a run that does not fit (r.memory_fits false): the busiest GPU's device memory against
/// the GPU's, or the host's offloaded state against its memory; the run's first lines show it.
std::string memory_verdict(const RunResult& r);
std::string per_gpu_text(const RunResult& r);
nlohmann::json memory_json(const RunResult& r);
nlohmann::json per_gpu_json(const RunResult& r);
/// Per pipeline stage (stage_usage.hpp): the JSON report's "stages".
nlohmann::json stages_json(const RunResult& r);

/// The busiest GPU's device memory and the fits verdict, read back from a JSON report (memory_json's
/// "memory": per_gpu[].device_used_bytes, or total_bytes in a result written before it existed):
/// the memory_GiB and fits of compare, sweep and the HTML comparison.
struct DeviceMemoryFigures {
  bool known = false;      ///< the report has a "memory" object
  double busiest_bytes = 0;
  bool fits = true;
  bool host_weighed = false;  ///< the verdict weighs the host's memory too (offload onto a host of known size)
};
DeviceMemoryFigures device_memory_of(const nlohmann::json& report);

}  // namespace dtsim
