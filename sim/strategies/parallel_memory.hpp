// Memory per GPU of a data x pipeline x tensor parallel plan (build_parallel_plan): one walk of the
// iteration per pipeline stage (memory_timeline.hpp), every data- and tensor-parallel rank of a stage
// holding the same.
#pragma once

#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/pipeline.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/gpu_spec.hpp"

#include <vector>

namespace dtsim {

/// Per pipeline stage, one of its GPUs at its peak: its virtual stages' (`ranges`, chunk-major) weights,
/// gradients and optimizer states at Megatron's shares, the micro-batches its schedule keeps in flight
/// at `micro` samples each, and the first stage's input batch of `input_bytes`. `curve` receives the
/// walk of the busiest stage (its first chunk), `busiest_stage` its index.
std::vector<GpuMemory> parallel_stage_memory(const Scenario& scenario, const Model& model, const GpuSpec& gpu,
                                             const ParallelConfig& cfg, const std::vector<StageRange>& ranges, double micro,
                                             double input_bytes, std::vector<MemoryPoint>& curve, int& busiest_stage);

}  // namespace dtsim
