// Text of `dtsim explain`: the step table with a star on every GPU-to-GPU transfer, the one-off
// set-up, per-GPU totals and the count of transfers per parameter update.
#pragma once

#include "sim/explain/step_table.hpp"
#include "sim/strategies/plan.hpp"

#include <string>

namespace dtsim {

struct ExplainHeader {
  std::string strategy;     ///< "dp", "ddp", "pipeline", "hybrid", "fsdp", "zero"
  std::string model;
  std::string cluster;
  std::string gpu;
  int gpus = 0;
  double batch_per_gpu = 0;
  std::string precision;
  int zero_stage = 0;       ///< strategy "zero": its stage
};

/// What a step is, in words ("scatter input chunks", "AllReduce gradient bucket 2").
std::string step_label(const StepRow& row, bool once = false);

std::string format_step_table(const ExplainHeader& header, const StepTable& table, const Plan& plan);

}  // namespace dtsim
