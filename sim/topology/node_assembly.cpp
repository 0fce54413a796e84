// One node of the cluster: sockets, PCIe tree, NVLink/NVSwitch, NICs.
//
// Placement rules (the real machines' layouts, see topologies/*.json):
//  - PCIe switch s hangs off socket s * sockets / switches (switches split evenly, in order).
//  - GPU g sits on PCIe switch g / gpus_per_pcie_switch, or, with no switches, on the root ports
//    of socket g * sockets / gpus_per_node.
//  - NICs attach to the same points (switches, else sockets): with no more NICs than points NIC i
//    goes to point i (a DGX-1 with one NIC has it on the first PCIe switch); with more, NICs are
//    split evenly in order (DGX A100: NICs 0,1 with GPUs 0,1 on switch 0).
#include "sim/topology/topology_assembly.hpp"

#include <fmt/format.h>

namespace dtsim {

namespace {
std::string dev(int node, const std::string& what)
{
  return fmt::format("n{}.{}", node, what);
}
}  // namespace

void add_node(Topology& t, const TopologySpec& s, int node)
{
  const double pcie_bw = pcie_bandwidth(s.pcie_gen, s.pcie_lanes);

  std::vector<int> cpus;
  for (int c = 0; c < s.cpu_sockets; ++c)
    cpus.push_back(t.add_device(dev(node, fmt::format("cpu{}", c)), DeviceKind::Cpu, node, c));
  for (int a = 0; a < s.cpu_sockets; ++a)
    for (int b = a + 1; b < s.cpu_sockets; ++b)
      t.add_link(dev(node, fmt::format("cpu{}-cpu{}", a, b)), LinkKind::CpuInterconnect, cpus[a], cpus[b],
                 s.cpu_link_bandwidth, s.cpu_link_latency);

  std::vector<int> switches;
  for (int p = 0; p < s.pcie_switches; ++p) {
    const int sw = t.add_device(dev(node, fmt::format("pcie{}", p)), DeviceKind::PcieSwitch, node, p);
    const int socket = p * s.cpu_sockets / s.pcie_switches;
    t.add_link(dev(node, fmt::format("pcie{}-cpu{}", p, socket)), LinkKind::Pcie, sw, cpus[socket], pcie_bw,
               s.pcie_latency, s.pcie_lanes);
    switches.push_back(sw);
  }

  int nvswitch = -1;
  if (s.intra_kind == IntraNodeKind::NvSwitch)
    nvswitch = t.add_device(dev(node, "nvswitch"), DeviceKind::NvSwitch, node, 0);

  std::vector<int> gpus;
  for (int g = 0; g < s.gpus_per_node; ++g) {
    const int gpu = t.add_device(dev(node, fmt::format("gpu{}", g)), DeviceKind::Gpu, node, g);
    gpus.push_back(gpu);
    t.add_gpu_rank(gpu);
    if (!switches.empty()) {
      const int p = g / s.gpus_per_pcie_switch;
      t.add_link(dev(node, fmt::format("gpu{}-pcie{}", g, p)), LinkKind::Pcie, gpu, switches[p], pcie_bw,
                 s.pcie_latency, s.pcie_lanes);
    } else {
      const int socket = g * s.cpu_sockets / s.gpus_per_node;
      t.add_link(dev(node, fmt::format("gpu{}-cpu{}", g, socket)), LinkKind::Pcie, gpu, cpus[socket], pcie_bw,
                 s.pcie_latency, s.pcie_lanes);
    }
    if (nvswitch >= 0)
      t.add_link(dev(node, fmt::format("gpu{}-nvswitch", g)), LinkKind::NvLink, gpu, nvswitch,
                 s.nvlink_lanes_per_gpu * s.nvlink_lane_bandwidth, s.nvlink_latency, s.nvlink_lanes_per_gpu);
  }
  for (const NvLinkPair& p : s.nvlink_pairs)
    t.add_link(dev(node, fmt::format("gpu{}-gpu{}", p.a, p.b)), LinkKind::NvLink, gpus[p.a], gpus[p.b],
               p.lanes * s.nvlink_lane_bandwidth, s.nvlink_latency, p.lanes);

  const bool on_switches = !switches.empty();
  const int points = on_switches ? s.pcie_switches : s.cpu_sockets;
  const double nic_pcie_bw = pcie_bandwidth(s.nic_pcie_gen, 16);
  for (int i = 0; i < s.nics_per_node; ++i) {
    const int nic = t.add_device(dev(node, fmt::format("nic{}", i)), DeviceKind::Nic, node, i);
    // Spread over the switches (or sockets): NIC i beside the first GPU of the i-th equal share of
    // them, the GPUs NCCL's channels give it (Expansion::nic_of: GPU g uses NIC g x nics / gpus).
    const int point = i * points / s.nics_per_node;
    const int to = on_switches ? switches[point] : cpus[point];
    t.add_link(dev(node, fmt::format("nic{}-{}{}", i, on_switches ? "pcie" : "cpu", point)), LinkKind::Pcie, nic, to,
               nic_pcie_bw, s.pcie_latency, 16);
  }
}

}  // namespace dtsim
