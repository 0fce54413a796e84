#include "calibration/bench/bench_common.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>

namespace dtsim::bench {

Args::Args(int argc, char** argv, const std::vector<std::string>& with_value, const std::vector<std::string>& flags)
{
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    if (const auto eq = a.find('='); eq != std::string::npos)
      value = a.substr(eq + 1), a = a.substr(0, eq);
    if (std::find(flags.begin(), flags.end(), a) != flags.end()) {
      values_[a] = "1";
    } else if (std::find(with_value.begin(), with_value.end(), a) != with_value.end()) {
      if (value.empty()) {
        if (i + 1 >= argc)
          throw BenchError("option " + a + " needs a value");
        value = argv[++i];
      }
      values_[a] = value;
    } else {
      throw BenchError("unknown option '" + a + "' (see --help)");
    }
  }
}

std::string Args::get(const std::string& name, const std::string& fallback) const
{
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

long long Args::get_int(const std::string& name, long long fallback) const
{
  const std::string v = get(name, "");
  if (v.empty())
    return fallback;
  return parse_bytes(v);
}

std::vector<std::string> Args::list(const std::string& name, const std::string& fallback) const
{
  std::vector<std::string> out;
  std::string all = get(name, fallback), item;
  for (char c : all + ",") {
    if (c == ',') {
      if (!item.empty())
        out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  return out;
}

long long parse_bytes(const std::string& text)
{
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  long long scale = 1;
  const std::string suffix = end ? std::string(end) : "";
  if (suffix == "K" || suffix == "k")
    scale = 1LL << 10;
  else if (suffix == "M" || suffix == "m")
    scale = 1LL << 20;
  else if (suffix == "G" || suffix == "g")
    scale = 1LL << 30;
  else if (!suffix.empty())
    throw BenchError("expected a number with an optional K/M/G suffix, found '" + text + "'");
  if (end == text.c_str() || v < 0)
    throw BenchError("expected a non-negative number, found '" + text + "'");
  return static_cast<long long>(v * static_cast<double>(scale));
}

int cuda_device_count()
{
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess)
    throw BenchError(std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) +
                     "); run this program on the GPU machine you want to calibrate");
  if (n == 0)
    throw BenchError("no CUDA device found; run this program on the GPU machine you want to calibrate");
  return n;
}

std::string nvidia_smi_topology()
{
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen("nvidia-smi topo -m 2>/dev/null", "r"), pclose);
  if (!pipe)
    return "";
  std::string out;
  std::array<char, 512> buf{};
  while (fgets(buf.data(), buf.size(), pipe.get()))
    out += buf.data();
  return out.find("GPU0") == std::string::npos ? "" : out;
}

nlohmann::json machine_description()
{
  nlohmann::json gpus = nlohmann::json::array();
  const int n = cuda_device_count();
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    DTSIM_CUDA(cudaGetDeviceProperties(&p, d));
    char bus[32] = {};
    DTSIM_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, d));
    gpus.push_back({{"index", d}, {"name", p.name}, {"pci_bus_id", bus},
                    {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
                    {"memory_bytes", p.totalGlobalMem}, {"multiprocessors", p.multiProcessorCount}});
  }
  int driver = 0, runtime = 0;
  DTSIM_CUDA(cudaDriverGetVersion(&driver));
  DTSIM_CUDA(cudaRuntimeGetVersion(&runtime));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::string topo = nvidia_smi_topology();
  return {{"hostname", host}, {"gpus", gpus}, {"cuda_driver_version", driver}, {"cuda_runtime_version", runtime},
          {"topology_text", topo.empty() ? nlohmann::json(nullptr) : nlohmann::json(topo)}};
}

int run_main(const char* program, int (*body)(int, char**), int argc, char** argv)
{
  try {
    return body(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    const std::string what = e.what();
    return what.find("CUDA device") != std::string::npos ? 3 : 1;
  }
}

void write_file(const std::string& path, const std::string& text)
{
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    if (!out.good())
      throw BenchError("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw BenchError("cannot rename " + tmp + " to " + path);
}

}  // namespace dtsim::bench
