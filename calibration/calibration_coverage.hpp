// Where a prediction rests on what its calibration did not measure. `dtsim calibrate` records the
// link efficiencies its logs left at their presets (fit.efficiency_kept: a 2-node NVLSTree log
// never loads the NICs to their limit). A prediction for another configuration that is bound by
// one of them (the same machine on 4 nodes, where NVLSTree is bound by the NICs) carries the
// preset, not the measurement: `dtsim validate` says so, row count and all.
#pragma once

#include "calibration/calibration_file.hpp"
#include "calibration/nccl_validate.hpp"

#include <string>
#include <vector>

namespace dtsim {

/// One line per efficiency that `calibration`'s NCCL fit kept at its preset and that bounds rows of
/// `log` as `result` simulated them (more than half of a row's time scales with it); empty when
/// there is none or the file records no NCCL fit. `options`: those `result` was simulated with.
std::vector<std::string> rows_bound_by_presets(const Topology& topology, const NcclTestsLog& log,
                                               const ValidationResult& result, const CollectiveOptions& options,
                                               const CalibrationFile& calibration);

}  // namespace dtsim
