#include "sim/collectives/comm_layout.hpp"

#include "sim/collectives/nccl_search.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <set>
#include <utility>

namespace dtsim {

namespace {

/// Lane counts between the local GPUs of one node (NVLink mesh), by local position.
std::vector<std::vector<int>> nvlink_lanes(const Topology& t, const std::vector<int>& devices)
{
  const std::size_t n = devices.size();
  std::vector<std::vector<int>> lanes(n, std::vector<int>(n, 0));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j)
      for (int l : t.links_between(devices[i], devices[j]))
        if (t.link(l).kind == LinkKind::NvLink)
          lanes[i][j] = lanes[j][i] += t.link(l).lanes;
  return lanes;
}

/// Lane-disjoint Hamiltonian cycles of the NVLink mesh (each later used in both directions).
std::vector<std::vector<int>> hamiltonian_cycles(std::vector<std::vector<int>> cap)
{
  const int n = static_cast<int>(cap.size());
  std::vector<std::vector<int>> cycles;
  if (n < 3)
    return cycles;
  for (;;) {
    std::vector<int> path{0};
    std::vector<bool> used(static_cast<std::size_t>(n), false);
    used[0] = true;
    // Prefer neighbours with the most spare lanes, so that later cycles still find links.
    std::function<bool()> dfs = [&]() -> bool {
      const int last = path.back();
      if (static_cast<int>(path.size()) == n)
        return cap[static_cast<std::size_t>(last)][0] > 0;
      std::vector<int> next;
      for (int v = 0; v < n; ++v)
        if (!used[static_cast<std::size_t>(v)] && cap[static_cast<std::size_t>(last)][static_cast<std::size_t>(v)] > 0)
          next.push_back(v);
      std::stable_sort(next.begin(), next.end(), [&](int a, int b) {
        return cap[static_cast<std::size_t>(last)][static_cast<std::size_t>(a)] >
               cap[static_cast<std::size_t>(last)][static_cast<std::size_t>(b)];
      });
      for (int v : next) {
        used[static_cast<std::size_t>(v)] = true;
        path.push_back(v);
        if (dfs())
          return true;
        path.pop_back();
        used[static_cast<std::size_t>(v)] = false;
      }
      return false;
    };
    if (!dfs())
      break;
    for (int i = 0; i < n; ++i) {
      const auto a = static_cast<std::size_t>(path[static_cast<std::size_t>(i)]);
      const auto b = static_cast<std::size_t>(path[static_cast<std::size_t>((i + 1) % n)]);
      --cap[a][b];
      --cap[b][a];
    }
    cycles.push_back(path);
  }
  return cycles;
}

double gbps(double bytes_per_s) { return bytes_per_s / 1e9; }

/// On an NVSwitch node any order of the GPUs is a ring, and NCCL's search picks the GPU a channel
/// leaves by for its NIC: search.cc sorts the candidates for the last GPU by their path to the
/// network (ncclTopoSearchNextGpuSort with sortNet when backToNet is the next step), and a ring
/// leaves through another NIC than it entered by where it can (crossNic). `local` is a channel's
/// order of local positions, entering at the first; `nic_hops[p][k]` the hops from position p's
/// GPU to the node's NIC k. Where a GPU is nearer a NIC than the last one (fewest hops, then a NIC
/// other than the one the channel enters by), the nearest such GPU latest in the order moves to
/// the end. With a NIC per GPU every exit already has its own NIC, and nothing moves; with fewer
/// (one NIC on a DGX A100) the ring would otherwise leave from a GPU behind the other socket.
void leave_near_a_nic(std::vector<int>& local, const std::vector<std::vector<std::size_t>>& nic_hops)
{
  if (local.size() < 3 || nic_hops.empty() || nic_hops.front().empty())
    return;
  const auto& entry = nic_hops[static_cast<std::size_t>(local.front())];
  const auto entry_nic = static_cast<std::size_t>(std::min_element(entry.begin(), entry.end()) - entry.begin());
  const auto score = [&](int position) {  // (hops to the nearest NIC, 1 if that is the entry's NIC)
    std::pair<std::size_t, int> best{SIZE_MAX, 1};
    const auto& hops = nic_hops[static_cast<std::size_t>(position)];
    for (std::size_t k = 0; k < hops.size(); ++k)
      best = std::min(best, std::pair{hops[k], k == entry_nic && hops.size() > 1 ? 1 : 0});
    return best;
  };
  std::size_t pick = local.size() - 1;
  for (std::size_t i = local.size() - 1; i-- > 1;)
    if (score(local[i]) < score(local[pick]))
      pick = i;
  std::rotate(local.begin() + static_cast<std::ptrdiff_t>(pick), local.begin() + static_cast<std::ptrdiff_t>(pick) + 1, local.end());
}

}  // namespace

RouteClass route_class(const Topology& t, int src, int dst)
{
  const Route& route = t.route(src, dst);
  const Link* slowest = nullptr;
  bool through_cpu = false;
  for (std::size_t i = 0; i < route.size(); ++i) {
    const Link& l = t.link(route[i].link);
    if (!slowest || l.bandwidth < slowest->bandwidth)
      slowest = &l;
    const int to = route[i].forward ? l.b : l.a;
    if (i + 1 < route.size() && t.device(to).kind == DeviceKind::Cpu)
      through_cpu = true;
  }
  if (slowest && slowest->kind == LinkKind::NvLink)
    return RouteClass::NvLink;
  if (slowest && slowest->kind == LinkKind::Network)
    return RouteClass::Network;
  return through_cpu ? RouteClass::PcieShm : RouteClass::Pcie;
}

double class_efficiency(RouteClass c, const NcclParams& p)
{
  switch (c) {
    case RouteClass::NvLink: return p.nvlink_efficiency;
    case RouteClass::Network: return p.network_efficiency;
    case RouteClass::PcieShm: return p.pcie_shm_efficiency;
    case RouteClass::Pcie: break;
  }
  return p.pcie_efficiency;
}

double route_efficiency(const Topology& t, int src, int dst, const NcclParams& p)
{
  if (t.route(src, dst).empty())
    return 1.0;
  return class_efficiency(route_class(t, src, dst), p);
}

CommLayout make_comm_layout(const Topology& t, const std::vector<int>& ranks)
{
  CommLayout c;
  c.ranks = ranks;
  std::map<int, int> node_index;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const int node = t.device(ranks[r]).node;
    auto [it, fresh] = node_index.emplace(node, static_cast<int>(c.by_node.size()));
    if (fresh)
      c.by_node.emplace_back();
    c.by_node[static_cast<std::size_t>(it->second)].push_back(static_cast<int>(r));
    c.node_of_rank.push_back(it->second);
  }
  const int nodes = static_cast<int>(c.by_node.size());
  c.ppn = static_cast<int>(c.by_node[0].size());
  for (const auto& members : c.by_node)
    c.ppn = std::min(c.ppn, static_cast<int>(members.size()));

  // What the first GPU is attached to.
  const int gpu0 = ranks[0];
  for (int l : t.links_of(gpu0)) {
    const Link& link = t.link(l);
    if (link.kind != LinkKind::NvLink)
      continue;
    c.nvlink = true;
    c.nvlink_lanes_per_gpu += link.lanes;
    const int other = link.a == gpu0 ? link.b : link.a;
    if (t.device(other).kind == DeviceKind::NvSwitch)
      c.nvswitch = true;
  }
  for (const auto& [node, idx] : node_index) {
    (void)idx;
    int sw = -1;
    for (int d : t.devices_of_node(node))
      if (t.device(d).kind == DeviceKind::NvSwitch) {
        sw = d;
        break;
      }
    c.nvswitch_of_node.push_back(sw);
  }
  const auto nics = t.nics_of_node(t.device(gpu0).node);
  c.nics_per_node = static_cast<int>(nics.size());
  for (int nic : nics)
    for (int l : t.links_of(nic))
      if (t.link(l).kind == LinkKind::Network)
        c.nic_bandwidth = std::max(c.nic_bandwidth, t.link(l).bandwidth);

  // Intra-node cycles over local positions 0..ppn-1.
  std::vector<std::vector<int>> cycles;
  if (c.nvlink && !c.nvswitch) {
    std::vector<int> devs;
    for (int i = 0; i < c.ppn; ++i)
      devs.push_back(ranks[static_cast<std::size_t>(c.by_node[0][static_cast<std::size_t>(i)])]);
    for (const auto& cyc : hamiltonian_cycles(nvlink_lanes(t, devs))) {
      cycles.push_back(cyc);
      std::vector<int> rev(cyc.rbegin(), cyc.rend());
      cycles.push_back(rev);
    }
  }
  if (cycles.empty()) {
    std::vector<int> order(static_cast<std::size_t>(c.ppn));
    std::iota(order.begin(), order.end(), 0);
    cycles.push_back(order);
  }
  const int nrings = nodes > 1 ? std::max<int>(static_cast<int>(cycles.size()), std::min(c.nics_per_node, c.ppn))
                               : static_cast<int>(cycles.size());
  // Hops from each local position's GPU (of the first node) to each of its node's NICs.
  std::vector<std::vector<std::size_t>> nic_hops;
  if (c.nvswitch && nodes > 1)
    for (int i = 0; i < c.ppn; ++i) {
      const int gpu = ranks[static_cast<std::size_t>(c.by_node[0][static_cast<std::size_t>(i)])];
      nic_hops.emplace_back();
      for (const int nic : nics)
        nic_hops.back().push_back(t.route(gpu, nic).size());
    }
  for (int ch = 0; ch < nrings; ++ch) {
    const auto& cyc = cycles[static_cast<std::size_t>(ch) % cycles.size()];
    // Cut the cycle so that channels enter and leave nodes at different GPUs (hence NICs).
    const int offset = nodes > 1 ? ch * c.ppn / nrings : 0;
    std::vector<int> local;
    for (int i = 0; i < c.ppn; ++i)
      local.push_back(cyc[static_cast<std::size_t>((i + offset) % c.ppn)]);
    leave_near_a_nic(local, nic_hops);
    std::vector<int> path, ring;
    for (int node = 0; node < nodes; ++node) {
      const auto& members = c.by_node[static_cast<std::size_t>(node)];
      const auto first = static_cast<std::ptrdiff_t>(path.size());
      for (const int position : local)
        path.push_back(members[static_cast<std::size_t>(position)]);
      ring.insert(ring.end(), path.begin() + first, path.end());
      if (node % 2 == 1)  // backwards on odd nodes: in and out of every node on one rail (see the header)
        std::reverse(ring.begin() + first, ring.end());
      for (std::size_t extra = static_cast<std::size_t>(c.ppn); extra < members.size(); ++extra) {
        path.push_back(members[extra]);
        ring.push_back(members[extra]);
      }
    }
    c.channel_paths.push_back(std::move(path));
    c.rings.push_back(std::move(ring));
  }

  // NCCL's view (tuning.cc inputs), in NCCL's own GB/s figures.
  NcclSystem& s = c.system;
  s.ranks = static_cast<int>(ranks.size());
  s.nodes = nodes;
  s.compute_capability = t.gpu.compute_capability > 0 ? t.gpu.compute_capability : 70;
  double intra_total = 0;
  double search_speed = 0;  // GB/s per ring where NCCL's search speed is modelled
  if (c.nvlink) {
    s.intra_hw = NcclHw::NvLink;
    intra_total = c.nvlink_lanes_per_gpu * nccl_nvlink_bw_per_link(s.compute_capability);
    s.channels = std::clamp(c.nvlink_lanes_per_gpu, 1, 16);
    if (c.nvswitch) {
      // NCCL's ring search over an NVSwitch node (see nccl_nvswitch_ring_search): an H100 node
      // runs 12 rings of 30 GB/s, not one per NVLink.
      const NcclRingSearch found = nccl_nvswitch_ring_search(intra_total, s.compute_capability);
      s.channels = found.channels;
      search_speed = found.bw;
    }
  } else {
    s.intra_hw = NcclHw::Pci;
    double pcie = 0;
    for (int l : t.links_of(gpu0))
      if (t.link(l).kind == LinkKind::Pcie)
        pcie = std::max(pcie, t.link(l).bandwidth);
    intra_total = gbps(pcie) * 12.0 / 15.75;  // NCCL: gen3 x16 = 12 GB/s
    s.channels = 2;
  }
  s.bw_intra = search_speed > 0 ? search_speed : intra_total / s.channels;
  s.bw_inter = s.bw_intra;
  s.tree_bw_intra = s.bw_intra;
  if (nodes > 1 && c.nics_per_node > 0) {
    const double nic = gbps(c.nic_bandwidth);
    s.channels = std::max(1, std::min(c.nics_per_node, c.ppn));
    s.bw_inter = std::min(nic, intra_total / s.channels);
    s.bw_intra = s.bw_inter;
    s.tree_bw_intra = std::min(2 * s.bw_inter, intra_total / s.channels);
  }
  s.nvls = c.nvswitch && s.compute_capability >= 90 && c.ppn > 1;
  // CTAs: src/transport/nvls.cc NVLS_NCHANNELS_SM90 16, SM100 24 on one node (_NVL) and 32 on more.
  s.nvls_channels = s.compute_capability >= 100 ? (nodes > 1 ? 32 : 24) : 16;
  if (nodes == 1) {
    // NCCL's NVLS graph on one node (nccl_nvls_graph_search): one channel per GPU, so 2 or 4 GPUs of
    // an H100 node reach 102 and 240 GB/s of AllReduce bus bandwidth, below a ring's 360, and NCCL
    // runs the ring there; 8 reach 476.
    const NcclNvlsGraph g = nccl_nvls_graph_search(intra_total, c.ppn, s.compute_capability);
    s.nvls_graph_channels = g.channels;
    s.nvls_bw_intra = g.bw_intra;
    s.nvls_bw_inter = g.bw_inter;
  } else {
    // Several nodes (NVLSTree): the graph's channels and their bandwidth as before (the NICs' search
    // is not modelled), the ring's bwInter across.
    s.nvls_graph_channels = 16;
    s.nvls_bw_intra = intra_total / s.nvls_graph_channels;
    s.nvls_bw_inter = s.bw_inter;
  }
  s.ll128 = c.nvlink && s.compute_capability >= 70;
  c.ring_weight.assign(c.rings.size(), static_cast<double>(s.channels) / static_cast<double>(c.rings.size()));
  return c;
}

}  // namespace dtsim
