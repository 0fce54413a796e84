#include "sim/collectives/nccl_tests_table.hpp"

#include "calibration/nccl_tests_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dtsim {

std::string nccl_float_str(double value, int width)
{
  for (int precision : {2, 1, 0}) {
    std::string s = fmt::format("{:>{}.{}f}", value, width, precision);
    if (static_cast<int>(s.size()) <= width)
      return s;
  }
  return fmt::format("{:>{}.0e}", value, width);
}

NcclTestsSize nccl_tests_size(const std::string& op, std::uint64_t requested, int ranks, int element_bytes)
{
  const std::uint64_t elt = static_cast<std::uint64_t>(std::clamp(element_bytes, 1, 16));
  const std::uint64_t n = static_cast<std::uint64_t>(std::max(ranks, 1));
  const std::uint64_t count = requested / elt;
  NcclTestsSize s;
  if (op == "all_gather" || op == "reduce_scatter") {
    const std::uint64_t per_rank = (count / n) & ~(16 / elt - 1);  // &-(16/eltSize): whole 16-byte chunks
    s.count = per_rank;
    s.bytes = per_rank * n * elt;
  } else if (op == "alltoall") {
    const std::uint64_t per_peer = count / n;
    s.count = per_peer * n;
    s.bytes = s.count * elt;
  } else {
    s.count = count;
    s.bytes = count * elt;
  }
  s.algbw_bytes = static_cast<double>(s.bytes);
  return s;
}

const std::vector<std::string>& nccl_tests_types()
{
  static const std::vector<std::string> types = {"int8",  "uint8", "int32",  "uint32",   "int64",  "uint64",
                                                 "half",  "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  return types;
}

int nccl_tests_type_bytes(const std::string& type)
{
  static const std::vector<int> bytes = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};  // same order as nccl_tests_types()
  const auto& types = nccl_tests_types();
  const auto it = std::find(types.begin(), types.end(), type);
  return it == types.end() ? 0 : bytes[static_cast<std::size_t>(it - types.begin())];
}

const std::vector<std::string>& nccl_tests_redops()
{
  static const std::vector<std::string> ops = {"sum", "prod", "max", "min", "avg", "mulsum"};
  return ops;
}

std::vector<std::uint64_t> nccl_tests_sweep_sizes_by_step(std::uint64_t min_bytes, std::uint64_t max_bytes,
                                                          std::uint64_t step)
{
  // nccl-tests' common.cu: size = minbytes; size <= maxbytes; size += stepbytes, so -b 0 -e 64 -i 16
  // runs 0, 16, 32, 48 and 64. A size of 0 has nothing to simulate: it is left out.
  std::vector<std::uint64_t> out;
  step = std::max<std::uint64_t>(step, 1);
  for (std::uint64_t s = min_bytes; s <= max_bytes; s += step) {
    if (s > 0)
      out.push_back(s);
    if (max_bytes - s < step)
      break;
  }
  return out;
}

std::vector<std::uint64_t> nccl_tests_sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes, double factor)
{
  std::vector<std::uint64_t> out;
  if (min_bytes == 0)
    min_bytes = 1;
  for (double s = static_cast<double>(min_bytes); s <= static_cast<double>(max_bytes) * (1 + 1e-12); s *= factor) {
    out.push_back(static_cast<std::uint64_t>(std::llround(s)));
    if (factor <= 1)
      break;
  }
  return out;
}

namespace {

std::string redop_of(const std::string& op, const std::string& redop)
{
  if (op == "all_gather" || op == "broadcast" || op == "alltoall" || op == "gather" || op == "scatter")
    return "none";
  return redop;
}

int root_of(const std::string& op)
{
  return op == "broadcast" || op == "reduce" || op == "gather" || op == "scatter" ? 0 : -1;
}

std::string run_columns(double time_us, double algbw, double busbw)
{
  return fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", nccl_float_str(time_us, 7), nccl_float_str(algbw, 6),
                     nccl_float_str(busbw, 6), "N/A");
}

}  // namespace

std::string format_nccl_tests_row(const std::string& op, int ranks, const NcclTestsTableRow& row,
                                  const std::string& datatype, const std::string& redop)
{
  const double t = row.time_us;
  const double algbw = t > 0 ? row.size.algbw_bytes / 1e9 / (t * 1e-6) : 0.0;
  const double busbw = algbw * nccl_tests_busbw_factor(op, ranks);
  const std::string runs = run_columns(t, algbw, busbw);
  return fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", row.size.bytes, row.size.count, datatype, redop_of(op, redop),
                     root_of(op)) +
         runs + runs;
}

std::string format_nccl_tests_table(const NcclTestsTable& table)
{
  std::string out;
  for (const auto& c : table.comments)
    out += "# " + c + "\n";
  out += fmt::format("# Collective test starting: {}_perf\n", table.op);
  out += fmt::format(
      "# nThread {} nGpus {} minBytes {} maxBytes {} step: {} warmup iters: {} iters: {} agg iters: 1 "
      "validation: {} graph: 0\n",
      table.threads, table.gpus_per_thread > 0 ? table.gpus_per_thread : table.ranks, table.min_bytes, table.max_bytes,
      table.step_bytes > 0 ? fmt::format("{}(bytes)", table.step_bytes) : fmt::format("{}(factor)", table.factor),
      table.warmup_iters, table.iters, table.check_iters);
  out += "#\n# Using devices\n";
  for (const auto& r : table.rank_lines)
    out += r + "\n";
  out += "#\n";
  out += "#                                                              out-of-place                       in-place          \n";
  out += "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n";
  out += "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n";
  double sum = 0;
  int n = 0;
  for (const auto& row : table.rows) {
    out += format_nccl_tests_row(table.op, table.ranks, row, table.datatype, table.redop) + "\n";
    const double t = row.time_us;
    const double busbw =
        t > 0 ? row.size.algbw_bytes / 1e9 / (t * 1e-6) * nccl_tests_busbw_factor(table.op, table.ranks) : 0.0;
    sum += 2 * busbw;  // out-of-place and in-place rows are equal
    n += 2;
  }
  out += "# Out of bounds values : 0 OK\n";
  out += fmt::format("# Avg bus bandwidth    : {} \n", n > 0 ? fmt::format("{:g}", sum / n) : std::string("0"));
  out += "#\n";
  out += fmt::format("# Collective test concluded: {}_perf\n", table.op);
  return out;
}

}  // namespace dtsim
