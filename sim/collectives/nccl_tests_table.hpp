// Prints a table in nccl-tests' own output format (nccl-tests 2.19 src/util.cu): the header, one
// row per size with out-of-place and in-place time/algbw/busbw/#wrong, and the footer with the
// average bus bandwidth, so measured and predicted logs can be diffed, plotted and parsed alike.
// dtsim's own information goes into '#' comment lines, which nccl-tests parsers ignore.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim {

/// nccl-tests' getFloatStr: %.2f, else %.1f, else %.0f, else exponent form, to fit `width`.
std::string nccl_float_str(double value, int width);

/// Element counts and printed size of one nccl-tests row for `op` on `ranks` ranks, elements of
/// `element_bytes` (float: 4; nccl-tests' *GetCollByteCount rules).
struct NcclTestsSize {
  std::uint64_t bytes = 0;   ///< printed size: max(send, recv) bytes
  std::uint64_t count = 0;   ///< printed count (per-rank count for AllGather/ReduceScatter/AllToAll)
  double algbw_bytes = 0;    ///< S in algbw = S / t
};
NcclTestsSize nccl_tests_size(const std::string& op, std::uint64_t requested_bytes, int ranks, int element_bytes = 4);

/// nccl-tests' data types (-d, test_typenames in src/common.cu): "int8", ..., "float", "bfloat16".
const std::vector<std::string>& nccl_tests_types();
/// Bytes per element of one of nccl_tests_types(); 0 for another name.
int nccl_tests_type_bytes(const std::string& type);
/// nccl-tests' reduction operations (-o): sum, prod, max, min, avg, mulsum.
const std::vector<std::string>& nccl_tests_redops();

/// Sizes of a sweep: min, min*factor, ... <= max (factor > 1).
std::vector<std::uint64_t> nccl_tests_sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes, double factor);
/// Sizes of a sweep by an additive step (nccl-tests -i): min, min+step, ... <= max (step > 0).
std::vector<std::uint64_t> nccl_tests_sweep_sizes_by_step(std::uint64_t min_bytes, std::uint64_t max_bytes,
                                                          std::uint64_t step);

struct NcclTestsTableRow {
  NcclTestsSize size;
  double time_us = 0;  ///< same value printed for out-of-place and in-place
};

struct NcclTestsTable {
  std::string op;                      ///< "all_reduce", ...
  int ranks = 0;
  int gpus_per_thread = 0;             ///< the header's nGpus (0: ranks, one process)
  std::vector<std::string> comments;   ///< printed as "# ..." lines before the table
  std::vector<std::string> rank_lines; ///< "#  Rank ..." lines
  std::uint64_t min_bytes = 0, max_bytes = 0;
  double factor = 2;
  std::uint64_t step_bytes = 0;        ///< > 0: an additive step (-i) instead of the factor
  int threads = 1;                     ///< the header's nThread (-t)
  int warmup_iters = 0, iters = 1, check_iters = 0;  ///< as given (-w, -n, -c); a simulation runs one
  std::string datatype = "float";      ///< -d
  std::string redop = "sum";           ///< -o, printed for reducing collectives
  std::vector<NcclTestsTableRow> rows;
};

/// The whole output, ending in a newline.
std::string format_nccl_tests_table(const NcclTestsTable& table);

/// One data row (no newline), exported for tests.
std::string format_nccl_tests_row(const std::string& op, int ranks, const NcclTestsTableRow& row,
                                  const std::string& datatype = "float", const std::string& redop = "sum");

}  // namespace dtsim
