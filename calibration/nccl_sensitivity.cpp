#include "calibration/nccl_sensitivity.hpp"

#include "sim/collectives/comm_layout.hpp"
#include "sim/collectives/nccl_tests_sweep.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace dtsim {

double& nccl_rate_parameter(NcclParams& p, const std::string& name)
{
  if (name == "ll_rate_scale")
    return p.ll_rate_scale;
  if (name == "ll128_rate_scale")
    return p.ll128_rate_scale;
  if (name == "nvls_efficiency")
    return p.nvls_efficiency;
  if (name == "network_efficiency")
    return p.network_efficiency;
  if (name == "nvlink_efficiency")
    return p.nvlink_efficiency;
  if (name == "pcie_shm_efficiency")
    return p.pcie_shm_efficiency;
  if (name == "pcie_efficiency")
    return p.pcie_efficiency;
  throw std::logic_error("unknown NCCL rate parameter " + name);
}

std::vector<std::string> candidate_link_efficiencies(const Topology& topology)
{
  // The classes of the routes a collective's flows take: GPU to GPU inside each node (NVLink,
  // PCIe, PCIe through host memory), and, across nodes, GPU to NIC (PCIe) and NIC to NIC.
  std::set<RouteClass> classes;
  const auto& gpus = topology.gpus();
  for (int a : gpus)
    for (int b : gpus)
      if (a != b && topology.device(a).node == topology.device(b).node)
        classes.insert(route_class(topology, a, b));
  const CommLayout layout = make_comm_layout(topology, gpus);
  if (layout.system.nodes > 1) {
    classes.insert(RouteClass::Network);
    classes.insert(RouteClass::Pcie);
  }
  std::vector<std::string> out;
  for (RouteClass c : classes)
    switch (c) {
      case RouteClass::NvLink: out.emplace_back("nvlink_efficiency"); break;
      case RouteClass::Pcie: out.emplace_back("pcie_efficiency"); break;
      case RouteClass::PcieShm: out.emplace_back("pcie_shm_efficiency"); break;
      case RouteClass::Network: out.emplace_back("network_efficiency"); break;
    }
  if (layout.system.nvls)
    out.emplace_back("nvls_efficiency");
  return out;
}

bool link_share_applies(const std::string& efficiency, NcclAlgo algo, NcclProto proto)
{
  if (proto != NcclProto::Simple)
    return false;
  const bool nvls = algo == NcclAlgo::Nvls || algo == NcclAlgo::NvlsTree;
  return !(nvls && efficiency == "nvlink_efficiency");
}

std::vector<EfficiencyShares> efficiency_shares(const Topology& topology, CollectiveOp op,
                                                const std::vector<std::uint64_t>& sizes,
                                                const CollectiveOptions& options, const std::vector<double>& base_us)
{
  // Lowering an efficiency by 1% makes the time that scales with it 1/0.99 - 1 = 1.01% longer. A
  // small step keeps the derivative local: two classes near the same rate (a 400 Gb/s NIC behind
  // PCIe 5) must not both look like bottlenecks.
  constexpr double kStep = 0.01;
  const double slow_down = 1.0 / (1.0 - kStep) - 1.0;
  std::vector<EfficiencyShares> out;
  for (const std::string& name : candidate_link_efficiencies(topology)) {
    CollectiveOptions perturbed = options;
    if (!perturbed.params)  // what add_collective would take
      perturbed.params = NcclParams::defaults(make_comm_layout(topology, topology.gpus()).system.compute_capability);
    nccl_rate_parameter(*perturbed.params, name) *= 1.0 - kStep;
    const auto points = simulate_nccl_tests_sweep(topology, op, sizes, perturbed);
    EfficiencyShares shares{name, std::vector<double>(sizes.size(), 0.0)};
    for (std::size_t i = 0; i < sizes.size() && i < points.size() && i < base_us.size(); ++i)
      shares.us[i] = std::clamp((points[i].time_us - base_us[i]) / slow_down, 0.0, base_us[i]);
    out.push_back(std::move(shares));
  }
  return out;
}

}  // namespace dtsim
