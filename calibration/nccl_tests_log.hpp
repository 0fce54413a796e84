// Reads the text output of NVIDIA's nccl-tests (all_reduce_perf, sendrecv_perf, ...): the table of
// size / count / type / redop [/ root] / time / algbw / busbw / #wrong (or error) for out-of-place
// and in-place runs. Both layouts are accepted: the current one (with a root column and #wrong)
// and the older one (no root column, an "error" column). Lines starting with '#' are comments.
#pragma once

#include "sim/collectives/nccl_env.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

struct NcclTestsRun {
  double time_us = 0;
  double algbw = 0;  ///< GB/s (1e9 bytes/s)
  double busbw = 0;  ///< GB/s
};

struct NcclTestsRow {
  std::uint64_t size = 0;   ///< bytes, as nccl-tests prints it
  std::uint64_t count = 0;  ///< elements
  std::string type;
  std::string redop;
  int root = -1;            ///< -1 when the layout has no root column
  NcclTestsRun out_of_place;
  NcclTestsRun in_place;
  int line = 0;             ///< 1-based line number in the file
};

struct NcclTestsLog {
  std::string path;
  std::string op;             ///< "all_reduce", "all_gather", ..., "" when it cannot be told
  bool has_root_column = true;
  int ranks = 0;              ///< "#  Rank" lines, else busbw/algbw, else nThread x nGpus (> 1); 0 if unknown
  /// The rank counts the log is consistent with: [ranks, ranks] unless ranks came from busbw/algbw,
  /// whose 2-decimal rounding cannot tell 994 from 1024 ranks.
  int ranks_min = 0, ranks_max = 0;
  int gpus_per_thread = 0;    ///< nGpus of the "# nThread T nGpus G" header (-g); 0 if absent
  /// Per "#  Rank" line, in order: the host and the CUDA device it names ("... on HOST device D
  /// [...]"); empty unless every rank line names both. A run on a subset of a node's GPUs (-g 4 on
  /// an 8-GPU machine) lists only the GPUs it used.
  std::vector<std::pair<std::string, int>> rank_devices;
  std::vector<NcclTestsRow> rows;
  std::optional<double> avg_busbw;  ///< the "# Avg bus bandwidth" footer
  /// NCCL_* settings named outside the data rows: "NAME=value" (an exported variable, mpirun's
  /// "-x NAME=value", a header note) or NCCL_DEBUG's "NAME set by environment to value".
  NcclEnv nccl_env;
};

/// True when `text` contains at least one nccl-tests data row (used to tell file formats apart).
bool looks_like_nccl_tests_log(const std::string& text);

/// Parses a log; throws InputError naming `path` and the line when a data row is malformed or the
/// file has no rows.
NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& path);
NcclTestsLog load_nccl_tests_log(const std::string& path);

/// The busbw/algbw factor nccl-tests uses for `op` on `ranks` ranks (1 when unknown).
double nccl_tests_busbw_factor(const std::string& op, int ranks);

/// Rank count implied by the busbw/algbw ratio of the largest rows (AllReduce: 2(n-1)/n,
/// AllGather/ReduceScatter/AllToAll: (n-1)/n); 0 when the op's factor does not depend on n.
int infer_ranks_from_bandwidths(const NcclTestsLog& log);
/// The range of rank counts whose busbw/algbw factor every row's printed (2-decimal) bandwidths
/// allow; {0, 0} when the op's factor does not depend on n or no row has algbw >= 1 GB/s.
std::pair<int, int> rank_range_from_bandwidths(const NcclTestsLog& log);

}  // namespace dtsim
