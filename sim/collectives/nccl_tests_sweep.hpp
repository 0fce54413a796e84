// The nccl-tests twin: simulates a sweep of sizes of one collective on all GPUs of a topology, in
// ONE task graph (each size starts when the previous one has finished on every rank), and returns
// the time of each, as nccl-tests would print it.
#pragma once

#include "sim/collectives/collective_options.hpp"
#include "sim/collectives/nccl_tests_table.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dtsim {

struct NcclTestsPoint {
  NcclTestsSize size;
  double time_us = 0;      ///< simulated
  std::string algorithm;   ///< e.g. "Ring/LL128"
  double model_us = 0;     ///< NCCL's own cost-model time for that choice
};

/// "all_reduce" -> CollectiveOp::AllReduce, ...; nullopt when unknown.
std::optional<CollectiveOp> parse_collective_op(const std::string& name);

/// GPUs per thread of the usual nccl-tests run on this topology: one process drives every GPU of a
/// single node (-g 8), one MPI process per GPU across nodes (-g 1).
int usual_gpus_per_thread(const Topology& topology);

std::vector<NcclTestsPoint> simulate_nccl_tests_sweep(const Topology& topology, CollectiveOp op,
                                                      const std::vector<std::uint64_t>& sizes,
                                                      const CollectiveOptions& options, int root = 0,
                                                      int element_bytes = 4);

}  // namespace dtsim
