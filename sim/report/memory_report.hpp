// The per-GPU sections of the text and JSON reports: memory (and whether it fits), bytes sent and
// received, busy and idle time (GPU0 as DataParallel's hub, a pipeline's bubble).
#pragma once

#include "sim/report/results.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace dtsim {

std::string memory_text(const RunResult& r);
std::string per_gpu_text(const RunResult& r);
nlohmann::json memory_json(const RunResult& r);
nlohmann::json per_gpu_json(const RunResult& r);
/// Per pipeline stage (stage_usage.hpp): the JSON report's "stages".
nlohmann::json stages_json(const RunResult& r);

}  // namespace dtsim
