#include "calibration/nccl_tests_log.hpp"
#include "sim/util/text_file.hpp"
#include "sim/collectives/nccl_tests_table.hpp"

#include "sim/util/input_error.hpp"
#include "sim/util/number_text.hpp"
#include "sim/util/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

namespace dtsim {

namespace {

// nccl-tests prints one row per message size (-b .. -e by -f): 64 sizes span 1 B .. 8 EiB at -f 2.
// A log of several runs stays far below this; more is not a log (and would take hours to simulate).
constexpr std::size_t kMaxRows = 4096;

bool is_integer(const std::string& t)
{
  if (t.empty())
    return false;
  std::size_t i = t[0] == '-' ? 1 : 0;
  return i < t.size() && std::all_of(t.begin() + static_cast<long>(i), t.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::optional<double> to_number(const std::string& t)
{
  return parse_double(t);
}

/// The count at `after` in a header line ("nThread 1 nGpus 8"; prose such as "nGpus 1, one process"
/// reads as 1): nullopt when no digits start there, -1 when they are not a count up to 2^20.
std::optional<std::int64_t> header_count(const std::string& line, std::size_t after)
{
  std::size_t end = after;
  while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end])))
    ++end;
  if (end == after)
    return std::nullopt;
  return parse_int(std::string_view(line).substr(after, end - after), 0, 1 << 20).value_or(-1);
}

/// Finds the collective named in `text` ("all_reduce_perf", "allreduce", ...); most specific first.
/// The largest algbw / busbw a row may show (GB/s): NVLink 5 gives a GPU 900 GB/s per direction
/// (NVIDIA Blackwell datasheet); 1e5 leaves room, as the bandwidth logs' bound.
constexpr double kMaxBusbw = 1e5;

/// A row's time (us): a collective takes at least a kernel launch, a few microseconds (NCCL's
/// baseLat, tuning.cc), so 1 ns leaves room; at most 1e12 us (11.6 days), beyond any benchmark run.
constexpr double kMinTimeUs = 1e-3;
constexpr double kMaxTimeUs = 1e12;

/// The largest size (bytes) or count a row may show: 1 TiB, beyond one GPU's memory (192 GB on a
/// B200, NVIDIA datasheet), where nccl-tests' buffers live.
constexpr std::uint64_t kMaxRowBytes = std::uint64_t{1} << 40;

std::string op_in(const std::string& raw)
{
  const std::string text = lower(raw);
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"reduce_scatter", "reduce_scatter"}, {"reducescatter", "reduce_scatter"},
      {"all_reduce", "all_reduce"},         {"allreduce", "all_reduce"},
      {"all_gather", "all_gather"},         {"allgather", "all_gather"},
      {"alltoall", "alltoall"},             {"all_to_all", "alltoall"},
      {"sendrecv", "sendrecv"},             {"broadcast", "broadcast"},
      {"reduce_perf", "reduce"},            {"gather_perf", "gather"},
      {"scatter_perf", "scatter"},          {"hypercube", "hypercube"}};
  for (const auto& [key, op] : names)
    if (text.find(key) != std::string::npos)
      return op;
  return "";
}

bool is_data_row(const std::vector<std::string>& t)
{
  return t.size() >= 12 && is_integer(t[0]) && t[0][0] != '-' && is_integer(t[1]);
}

/// A line that starts as a data row does (size, count, data type) whatever follows: a row cut short
/// or with a negative size, which the parser refuses rather than skips as prose.
bool starts_like_row(const std::vector<std::string>& t)
{
  return t.size() >= 3 && is_integer(t[0]) && is_integer(t[1]) && nccl_tests_type_bytes(t[2]) > 0;
}

/// True when `line` states how the run was set up rather than describing something: NCCL_DEBUG's
/// "NAME set by environment to value", a command line (an nccl-tests binary, mpirun, srun,
/// dtsim-bench-nccl's header), an environment listing ("ENV: ...", "export ...", "env ...") or a
/// line of settings only (dtsim nccl-tests' "# NCCL_ALGO=ring NCCL_PROTO=ll").
bool states_settings(const std::string& line)
{
  if (line.find(" set by environment to ") != std::string::npos)
    return true;
  for (const char* command : {"_perf", "mpirun", "srun ", "dtsim-bench-nccl"})
    if (line.find(command) != std::string::npos)
      return true;
  const auto start = line.find_first_not_of("# \t");
  if (start == std::string::npos)
    return false;
  const std::string head = lower(line.substr(start, 7));
  if (head.rfind("env", 0) == 0 || head.rfind("export ", 0) == 0)
    return true;
  const auto tokens = split_ws(line.substr(start));  // "# NCCL_ALGO=ring NCCL_PROTO=ll" (dtsim nccl-tests)
  return std::all_of(tokens.begin(), tokens.end(),
                     [](const std::string& t) { return t.rfind("NCCL_", 0) == 0 && t.find('=') != std::string::npos; });
}

/// Appends the NCCL_* settings `line` names to `env`.
void collect_nccl_env(const std::string& line, NcclEnv& env)
{
  if (line.find("NCCL_") == std::string::npos || !states_settings(line))
    return;
  static const std::regex setting(R"((NCCL_[A-Z0-9_]+)(?:=| set by environment to )(\S+))");
  for (std::sregex_iterator it(line.begin(), line.end(), setting), end; it != end; ++it) {
    std::string value = (*it)[2].str();
    while (!value.empty() && std::string(";,.)\"'").find(value.back()) != std::string::npos)
      value.pop_back();
    while (!value.empty() && (value.front() == '"' || value.front() == '\''))
      value.erase(value.begin());
    if (!value.empty() && (std::isalnum(static_cast<unsigned char>(value[0])) || value[0] == '^' || value[0] == '/'))
      env.emplace_back((*it)[1].str(), value);  // not "NCCL_ALGO=(NCCL's choice)" of dtsim's own tables
  }
}

}  // namespace

bool looks_like_nccl_tests_log(const std::string& text)
{
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '#')
      continue;
    if (is_data_row(split_ws(line)))
      return true;
  }
  return false;
}

double nccl_tests_busbw_factor(const std::string& op, int n)
{
  if (n <= 0)
    return 1.0;
  if (op == "all_reduce")
    return 2.0 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter" || op == "alltoall")
    return static_cast<double>(n - 1) / n;
  return 1.0;
}

int infer_ranks_from_bandwidths(const NcclTestsLog& log)
{
  if (log.op != "all_reduce" && log.op != "all_gather" && log.op != "reduce_scatter" && log.op != "alltoall")
    return 0;
  // The ratio is printed with 2 decimals: use the row with the largest algbw for precision.
  const NcclTestsRow* best = nullptr;
  for (const auto& r : log.rows)
    if (!best || r.out_of_place.algbw > best->out_of_place.algbw)
      best = &r;
  if (!best || best->out_of_place.algbw < 1.0)
    return 0;
  double ratio = best->out_of_place.busbw / best->out_of_place.algbw;
  if (log.op == "all_reduce")
    ratio /= 2.0;  // (n-1)/n
  if (ratio >= 0.999)
    return 0;
  return static_cast<int>(std::lround(1.0 / (1.0 - ratio)));
}

std::pair<int, int> rank_range_from_bandwidths(const NcclTestsLog& log)
{
  if (log.op != "all_reduce" && log.op != "all_gather" && log.op != "reduce_scatter" && log.op != "alltoall")
    return {0, 0};
  const double per_factor = log.op == "all_reduce" ? 2.0 : 1.0;
  double lo = 1.0, hi = std::numeric_limits<double>::infinity();  // n
  bool any = false;
  auto n_of = [&](double ratio) {  // n from busbw/algbw = per_factor (n-1)/n
    const double r = ratio / per_factor;
    return r >= 1.0 ? std::numeric_limits<double>::infinity() : 1.0 / (1.0 - r);
  };
  for (const auto& row : log.rows)
    for (const auto* run : {&row.out_of_place, &row.in_place}) {
      if (run->algbw < 1.0)
        continue;
      any = true;
      lo = std::max(lo, n_of((run->busbw - 0.005) / (run->algbw + 0.005)));
      hi = std::min(hi, n_of((run->busbw + 0.005) / (run->algbw - 0.005)));
    }
  if (!any || lo > hi)
    return {0, 0};
  constexpr double kMaxRanks = 1 << 20;
  return {static_cast<int>(std::ceil(lo - 1e-9)), static_cast<int>(std::floor(std::min(hi, kMaxRanks) + 1e-9))};
}

NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& path)
{
  NcclTestsLog log;
  log.path = path;
  std::istringstream in(text);
  int line_no = 0;
  int rank_lines = 0;
  std::vector<std::pair<std::string, int>> rank_devices;
  int header_ranks = 0;
  std::optional<bool> header_has_root;
  std::string op_from_header;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    const auto tokens = split_ws(line);
    if (tokens.empty() || !is_data_row(tokens))
      collect_nccl_env(line, log.nccl_env);
    if (!line.empty() && line[0] == '#') {
      const auto starting = line.find("Collective test starting:");
      if (starting != std::string::npos) {
        op_from_header = op_in(line.substr(starting));
        const auto test = split_ws(line.substr(starting + std::string("Collective test starting:").size()));
        if (op_from_header.empty())
          throw InputError(path, "", fmt::format("line {}: unknown collective test '{}' (expected all_reduce_perf, "
                                                 "all_gather_perf, broadcast_perf, ... of nccl-tests)", line_no,
                                                 test.empty() ? "" : test.front()));
      }
      else if (op_from_header.empty() && line.find("_perf") != std::string::npos)
        op_from_header = op_in(line);
      if (line.find("#  Rank") == 0) {
        ++rank_lines;
        static const std::regex on_device(R"(\son\s+(\S+)\s+device\s+(\d{1,6})\b)");
        std::smatch m;
        if (std::regex_search(line, m, on_device))
          rank_devices.emplace_back(m[1].str(), std::stoi(m[2].str()));
      }
      const auto ngpus = line.find("nGpus ");
      const auto nthread = line.find("nThread ");
      if (ngpus != std::string::npos && nthread != std::string::npos) {
        const auto gpus = header_count(line, ngpus + 6);
        const auto threads = header_count(line, nthread + 8);
        if (gpus && threads) {
          if (*gpus < 1 || *threads < 1 || *gpus * *threads > (1 << 20))
            throw InputError(path, "", fmt::format("line {}: expected 'nThread N nGpus M' with 1 to 1048576 ranks",
                                                   line_no));
          log.gpus_per_thread = static_cast<int>(*gpus);
          header_ranks = static_cast<int>(*threads * *gpus);
        }
      }
      const auto t = split_ws(line);
      if (std::find(t.begin(), t.end(), "size") != t.end() && std::find(t.begin(), t.end(), "redop") != t.end())
        header_has_root = std::find(t.begin(), t.end(), "root") != t.end();
      const auto avg = line.find("Avg bus bandwidth");
      if (avg != std::string::npos) {
        const auto colon = line.find(':', avg);
        if (colon != std::string::npos) {
          const auto toks = split_ws(line.substr(colon + 1));
          if (!toks.empty())
            log.avg_busbw = to_number(toks[0]);
        }
      }
      continue;
    }
    const auto& t = tokens;
    if (t.empty() || !(is_data_row(t) || starts_like_row(t)))
      continue;
    const bool root = header_has_root.value_or(t.size() != 12);
    const std::size_t first = root ? 5 : 4;
    if (t.size() < first + 8)
      throw InputError(path, "", fmt::format("line {}: expected {} columns in an nccl-tests row, found {}", line_no,
                                             first + 8, t.size()));
    NcclTestsRow row;
    row.line = line_no;
    const auto size = parse_uint64(t[0]);
    const auto count = parse_uint64(t[1]);
    if (!size || !count || *size > kMaxRowBytes || *count > kMaxRowBytes)
      throw InputError(path, "", fmt::format("line {}: expected integer size and count columns of at most 2^40, found "
                                             "'{}' '{}'", line_no, t[0], t[1]));
    row.size = *size;
    row.count = *count;
    row.type = t[2];
    row.redop = t[3];
    if (nccl_tests_type_bytes(row.type) == 0)
      throw InputError(path, "", fmt::format("line {}: expected an nccl-tests data type ({}), found '{}'", line_no,
                                             fmt::join(nccl_tests_types(), ", "), row.type));
    const auto& redops = nccl_tests_redops();
    if (row.redop != "none" && std::find(redops.begin(), redops.end(), row.redop) == redops.end())
      throw InputError(path, "", fmt::format("line {}: expected an nccl-tests reduction ({}, none), found '{}'", line_no,
                                             fmt::join(redops, ", "), row.redop));
    if (root) {
      const auto r = parse_int(t[4], -1, 1 << 20);
      if (!r)
        throw InputError(path, "", fmt::format("line {}: expected an integer root column, found '{}'", line_no, t[4]));
      row.root = static_cast<int>(*r);
    }
    auto number = [&](std::size_t i) {
      const auto v = to_number(t[i]);
      if (!v)
        throw InputError(path, "", fmt::format("line {}: column {}: expected a number, found '{}'", line_no, i + 1, t[i]));
      return *v;
    };
    row.out_of_place = {number(first), number(first + 1), number(first + 2)};
    row.in_place = {number(first + 4), number(first + 5), number(first + 6)};
    for (const auto* run : {&row.out_of_place, &row.in_place})
      if (!(run->time_us >= kMinTimeUs && run->time_us <= kMaxTimeUs) || run->algbw < 0 || run->busbw < 0 ||
          run->algbw > kMaxBusbw || run->busbw > kMaxBusbw)
        throw InputError(path, "", fmt::format("line {}: expected a time from {:g} to {:g} us and bandwidths from 0 to {:g} "
                                               "GB/s, found {} us, {} and {} GB/s", line_no, kMinTimeUs, kMaxTimeUs, kMaxBusbw,
                                               run->time_us, run->algbw, run->busbw));
    if (log.rows.size() >= kMaxRows)
      throw InputError(path, "", fmt::format("line {}: more than {} data rows (expected an nccl-tests log, a few "
                                             "dozen rows per run)", line_no, kMaxRows));
    log.rows.push_back(row);
    log.has_root_column = root;
  }
  if (log.rows.empty())
    throw InputError(path, "", "no nccl-tests data rows found (expected lines of size, count, type, redop, time, algbw, busbw)");
  log.op = !op_from_header.empty() ? op_from_header : op_in(path.substr(path.find_last_of('/') + 1));
  if (log.op.empty())
    log.op = "all_reduce";  // the default test, and the only one whose rows have redop and root -1
  // "#  Rank" lines list every rank. Without them, busbw / algbw gives the count; the header's
  // nThread x nGpus is only the ranks of one process (an MPI run has one process per GPU).
  log.ranks = rank_lines > 0 ? rank_lines : infer_ranks_from_bandwidths(log);
  log.ranks_min = log.ranks_max = log.ranks;
  if (rank_lines == 0 && log.ranks > 0) {
    const auto [lo, hi] = rank_range_from_bandwidths(log);
    if (lo > 0) {
      log.ranks_min = lo;
      log.ranks_max = hi;
      log.ranks = std::clamp(log.ranks, lo, hi);
    }
  }
  if (rank_lines > 0 && header_ranks > rank_lines)
    throw InputError(path, "", fmt::format("the header's nThread x nGpus is {} ranks, but the log lists {} '#  Rank' "
                                           "lines (expected one line per rank)", header_ranks, rank_lines));
  if (rank_lines > 0 && static_cast<int>(rank_devices.size()) == rank_lines)
    log.rank_devices = std::move(rank_devices);
  if (log.ranks == 0 && header_ranks > 1)
    log.ranks = log.ranks_min = log.ranks_max = header_ranks;
  return log;
}

NcclTestsLog load_nccl_tests_log(const std::string& path)
{
  return parse_nccl_tests_log(read_input_file(path, "an nccl-tests output log"), path);
}

}  // namespace dtsim
