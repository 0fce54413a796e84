// Shared by the dtsim-bench-* programs: return-code checks, statistics over repeats, a small
// command-line reader, the machine description, and a main() wrapper that turns every failure into
// a clear message and a non-zero exit.
#pragma once

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim::bench {

struct BenchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void check_cuda(cudaError_t e, const char* what, const char* file, int line)
{
  if (e != cudaSuccess)
    throw BenchError(std::string(what) + " failed at " + file + ":" + std::to_string(line) + ": " +
                     cudaGetErrorString(e));
}
#define DTSIM_CUDA(call) ::dtsim::bench::check_cuda((call), #call, __FILE__, __LINE__)

/// Median and spread of repeated measurements.
struct Stats {
  double median = 0, min = 0, max = 0;
  int n = 0;
  nlohmann::json json(const char* unit) const
  {
    return {{std::string("median_") + unit, median}, {std::string("min_") + unit, min},
            {std::string("max_") + unit, max}, {"repeats", n}};
  }
};

inline Stats summarize(std::vector<double> v)
{
  Stats s;
  if (v.empty())
    return s;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  s.n = static_cast<int>(n);
  return s;
}

/// --key value and --flag options; unknown options are an error.
class Args {
public:
  Args(int argc, char** argv, const std::vector<std::string>& with_value, const std::vector<std::string>& flags);
  bool flag(const std::string& name) const { return values_.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback) const;
  long long get_int(const std::string& name, long long fallback) const;
  std::vector<std::string> list(const std::string& name, const std::string& fallback) const;

private:
  std::map<std::string, std::string> values_;
};

/// Parses sizes like 8, 64K, 32M, 1G (powers of two, as nccl-tests).
long long parse_bytes(const std::string& text);

/// Number of CUDA devices; throws BenchError with the driver's reason when there is none.
int cuda_device_count();

/// GPUs (name, PCI bus id, memory), driver and runtime versions, host name, and the output of
/// `nvidia-smi topo -m` when that command is available (null otherwise).
nlohmann::json machine_description();
std::string nvidia_smi_topology();

/// Runs `body`; a BenchError or other exception prints "PROGRAM: error: ..." and exits 1; a
/// missing GPU exits 3 with an explanation.
int run_main(const char* program, int (*body)(int, char**), int argc, char** argv);

/// Writes `text` to `path` through a temporary file and a rename.
void write_file(const std::string& path, const std::string& text);

}  // namespace dtsim::bench
