#include "sim/topology/topology_analysis.hpp"
#include "sim/topology/topology_report.hpp"

#include <fmt/format.h>

#include <map>

namespace dtsim {

namespace {

std::string number(double v)
{
  return v >= 1000 ? fmt::format("{:.0f}", v) : fmt::format("{:.4g}", v);
}

std::string plural(int n, const char* one, const char* many)
{
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

void devices_section(std::string& out, const Topology& t)
{
  std::map<DeviceKind, int> count;
  for (const Device& d : t.devices())
    ++count[d.kind];
  out += fmt::format("devices ({}):", t.devices().size());
  for (const auto& [kind, n] : count)
    out += fmt::format(" {} {}", n, to_string(kind));
  out += "\n";
}

void links_section(std::string& out, const Topology& t)
{
  std::map<LinkKind, std::map<std::pair<double, int>, int>> groups;  // kind -> (rate, lanes) -> count
  for (const Link& l : t.links())
    ++groups[l.kind][{l.bandwidth, l.lanes}];
  out += fmt::format("links ({}, full duplex, nominal rate per direction):\n", t.links().size());
  for (const auto& [kind, by_rate] : groups) {
    int total = 0;
    std::string parts;
    for (const auto& [rate_lanes, n] : by_rate) {
      total += n;
      parts += fmt::format("{}{} x {}", parts.empty() ? "" : ", ", n, format_rate(rate_lanes.first));
      if (kind == LinkKind::NvLink)
        parts += fmt::format(" ({} lane{})", rate_lanes.second, rate_lanes.second == 1 ? "" : "s");
    }
    out += fmt::format("  {:<17} {:>5}: {}\n", to_string(kind), total, parts);
  }
}

void injection_section(std::string& out, const Topology& t)
{
  out += "per-GPU injection bandwidth (per direction):\n";
  std::map<std::tuple<double, int, double, double>, std::vector<int>> same;
  const int per_node = t.gpus_per_node;
  for (int r = 0; r < per_node && r < static_cast<int>(t.gpus().size()); ++r) {
    const auto inj = injection_bandwidth(t, r);
    same[{inj.nvlink, inj.nvlink_lanes, inj.pcie, inj.network}].push_back(r);
  }
  for (const auto& [key, ranks] : same) {
    const auto& [nvlink, lanes, pcie, network] = key;
    std::string who = ranks.size() == static_cast<std::size_t>(per_node) ? "every GPU" : "GPU";
    if (ranks.size() != static_cast<std::size_t>(per_node))
      for (int r : ranks)
        who += fmt::format(" {}", r);
    out += fmt::format("  {}: NVLink {}, PCIe {}", who,
                       lanes > 0 ? fmt::format("{} ({} lanes)", format_rate(nvlink), lanes) : std::string("none"),
                       format_rate(pcie));
    out += t.nodes > 1 ? fmt::format(", network {} (NIC rate / GPUs of the node)\n", format_rate(network))
                       : ", network none (one node)\n";
  }
}

void matrix_section(std::string& out, const Topology& t)
{
  const auto gpus = t.gpus_of_node(0);
  const auto nics = t.nics_of_node(0);
  std::vector<std::pair<std::string, int>> cols;
  for (std::size_t i = 0; i < gpus.size(); ++i)
    cols.emplace_back(fmt::format("GPU{}", i), gpus[i]);
  for (std::size_t i = 0; i < nics.size(); ++i)
    cols.emplace_back(fmt::format("NIC{}", i), nics[i]);
  out += fmt::format("path matrix, node 0 (nvidia-smi topo -m style){}:\n",
                     t.nodes > 1 ? "; GPUs on different nodes: NET" : "");
  out += "      ";
  for (const auto& c : cols)
    out += fmt::format(" {:>5}", c.first);
  out += "\n";
  for (const auto& row : cols) {
    out += fmt::format("{:<6}", row.first);
    for (const auto& c : cols)
      out += fmt::format(" {:>5}", path_type(t, row.second, c.second));
    out += "\n";
  }
  out += "  X = self, NV# = # NVLink lanes (direct or through the NVSwitch), PIX = same PCIe switch,\n"
         "  NODE = same CPU socket, SYS = across the CPU socket interconnect, NET = other node\n";
}

std::string route_text(const Topology& t, int from, int to)
{
  const Route& r = t.route(from, to);
  std::string path = t.device(from).name;
  int at = from;
  for (const Hop& h : r) {
    const Link& l = t.link(h.link);
    at = h.forward ? l.b : l.a;
    path += fmt::format(" -{}-> {}", to_string(l.kind), t.device(at).name);
  }
  return fmt::format("  {}\n      {}, bottleneck {}, latency {} us\n", path, plural(static_cast<int>(r.size()), "hop", "hops"),
                     format_rate(t.route_bandwidth(r)), number(t.route_latency(r) * 1e6));
}

void routes_section(std::string& out, const Topology& t)
{
  const auto& g = t.gpus();
  out += "sample routes (GPU ranks):\n";
  std::vector<std::pair<int, int>> pairs;
  if (g.size() > 1)
    pairs.emplace_back(0, 1);
  if (t.gpus_per_node > 2)
    pairs.emplace_back(0, t.gpus_per_node - 1);
  if (t.nodes > 1)
    pairs.emplace_back(0, t.gpus_per_node);
  for (const auto& [a, b] : pairs)
    out += route_text(t, g[a], g[b]);
  if (pairs.empty())
    out += "  (one GPU)\n";
}

}  // namespace

std::string format_rate(double bytes_per_s)
{
  return number(bytes_per_s / 1e9) + " GB/s";
}

std::string topology_show(const Topology& t)
{
  std::string out;
  const GpuSpec& gpu = t.gpu;
  out += fmt::format("topology {}: {} x {} {} = {} GPUs\n", t.name, plural(t.nodes, "node", "nodes"), t.gpus_per_node,
                     gpu.name, t.gpus().size());
  out += fmt::format("GPU {}: {} TFLOP/s fp32, {} TFLOP/s fp16 tensor, {} GiB, compute capability {}.{}\n", gpu.name,
                     number(gpu.fp32_flops / 1e12), number(gpu.peak_flops(Precision::Fp16) / 1e12),
                     number(gpu.memory_bytes / (1024.0 * 1024 * 1024)), gpu.compute_capability / 10,
                     gpu.compute_capability % 10);
  out += fmt::format("PCIe peer-to-peer: {}; GPUs relay traffic: {}\n", t.pcie_p2p ? "yes" : "no (staged through host memory)",
                     t.gpu_forwarding ? "yes" : "no");
  devices_section(out, t);
  links_section(out, t);
  injection_section(out, t);
  matrix_section(out, t);
  routes_section(out, t);
  const int n = static_cast<int>(t.gpus().size());
  if (n > 1)
    out += fmt::format("bisection bandwidth (max flow, GPU ranks 0-{} -> {}-{}, per direction): {}\n", n / 2 - 1, n / 2,
                       n - 1, format_rate(bisection_bandwidth(t)));
  return out;
}

}  // namespace dtsim
