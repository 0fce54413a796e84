#include "sim/topology/topology_spec.hpp"

#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace dtsim {

namespace {

const std::vector<std::string> kTopKeys = {"base", "name", "description", "notes", "nodes", "gpus_per_node",
                                           "gpu", "gpu_forwarding", "intra_node", "nic", "fabric", "host",
                                           "calibration"};  // Topology::calibration, loaded by calibration/calibration_apply.cpp
const std::vector<std::string> kIntraKeys = {
    "kind", "nvlink_lane_gbytes", "nvlink_lanes_per_gpu", "nvlink_latency_us", "max_gpus", "nvlink_pairs",
    "pcie_gen", "pcie_lanes", "pcie_latency_us", "p2p", "cpu_sockets", "pcie_switches", "gpus_per_pcie_switch",
    "cpu_interconnect"};
const std::vector<std::string> kCpuLinkKeys = {"gbytes", "latency_us"};
const std::vector<std::string> kNicKeys = {"count_per_node", "gbps", "latency_us", "pcie_gen"};
const std::vector<std::string> kHostKeys = {"cpu", "cores", "threads_per_core", "memory_gbytes_per_s_per_socket",
                                            "memory_gib", "turbo_ghz", "sources"};
const std::vector<std::string> kTurboKeys = {"max", "all_core"};
const std::vector<std::string> kFabricKeys = {"kind", "latency_us", "nics_per_leaf", "oversubscription"};

void check_member_names(const LayeredJson& layers)
{
  for (const auto& obj : layers.objects_at({}))
    obj.reject_unknown(kTopKeys);
  for (const auto& obj : layers.objects_at({})) {  // prose, but of the type it is documented as
    if (auto d = obj.find("description"))
      d->as_string();
    if (auto notes = obj.find("notes"))
      for (const auto& note : notes->items())
        note.as_string();
  }
  for (const auto& obj : layers.objects_at({"intra_node"}))
    obj.reject_unknown(kIntraKeys);
  for (const auto& obj : layers.objects_at({"intra_node", "cpu_interconnect"}))
    obj.reject_unknown(kCpuLinkKeys);
  for (const auto& obj : layers.objects_at({"nic"}))
    obj.reject_unknown(kNicKeys);
  for (const auto& obj : layers.objects_at({"fabric"}))
    obj.reject_unknown(kFabricKeys);
  for (const auto& obj : layers.objects_at({"host"})) {
    obj.reject_unknown(kHostKeys);
    if (auto sources = obj.find("sources"))
      for (const auto& s : sources->items())
        s.as_string();
  }
  for (const auto& obj : layers.objects_at({"host", "turbo_ghz"}))
    obj.reject_unknown(kTurboKeys);
}

// Most nodes a topology may have: 4096 nodes x 8 GPUs is beyond the largest published training
// runs on one fabric (Llama 3: 16384 GPUs) and keeps the graph and its checks within memory and time.
constexpr int kMaxNodes = 4096;  // and at most 65536 GPUs in all, below

int positive_int(const JsonReader& r)
{
  const auto v = r.as_positive_int();
  if (v > 1'000'000)
    r.fail(fmt::format("expected a positive integer of at most 1000000, got {}", v));
  return static_cast<int>(v);
}

/// A count of devices or links of one node (NICs, CPU sockets, PCIe switches, NVLink lanes): at most
/// 256, as gpus_per_node. Real nodes have up to 10 NICs (DGX H100: 8 compute + 2 storage), 8 sockets,
/// 18 NVLink lanes per GPU (H100); a larger count only builds a graph of millions of devices.
constexpr int kMaxPerNode = 256;

int per_node_count(const JsonReader& r, int min)
{
  const auto v = r.as_int_in(min, kMaxPerNode);
  return static_cast<int>(v);
}

int non_negative_int(const JsonReader& r)
{
  const auto v = r.as_int();
  if (v < 0 || v > 1'000'000)
    r.fail(fmt::format("expected an integer from 0 to 1000000, got {}", v));
  return static_cast<int>(v);
}

int pcie_gen_of(const JsonReader& r)
{
  const auto v = r.as_int();
  if (v < 3 || v > 5)
    r.fail(fmt::format("expected a PCIe generation of 3, 4 or 5, got {}", v));
  return static_cast<int>(v);
}

/// `blame_list`: a mesh of fewer GPUs than gpus_per_node is the list's fault (it comes from a more
/// specific layer than gpus_per_node: a user's pairs over a preset's node), else gpus_per_node's.
std::vector<NvLinkPair> read_pairs(const JsonReader& list, int gpus_per_node, const JsonReader& gpus_at, bool blame_list)
{
  std::vector<NvLinkPair> pairs;
  std::set<std::pair<int, int>> seen;
  int mesh_size = 0;
  for (const auto& item : list.items()) {
    const auto fields = item.items();
    if (fields.size() != 3)
      item.fail(fmt::format("expected [gpu, gpu, links] (3 integers), got {} elements", fields.size()));
    NvLinkPair p{non_negative_int(fields[0]), non_negative_int(fields[1]), positive_int(fields[2])};
    if (p.a == p.b)
      item.fail(fmt::format("an NVLink joins two different GPUs, got GPU {} to itself", p.a));
    if (!seen.insert({std::min(p.a, p.b), std::max(p.a, p.b)}).second)
      item.fail(fmt::format("GPUs {} and {} are listed twice (put the link count in one entry)", p.a, p.b));
    mesh_size = std::max({mesh_size, p.a + 1, p.b + 1});
    if (p.a < gpus_per_node && p.b < gpus_per_node)
      pairs.push_back(p);
  }
  if (gpus_per_node > mesh_size && blame_list)
    list.fail(fmt::format("expected an NVLink mesh of the node's {} GPUs (gpus_per_node), got pairs among {} GPUs",
                          gpus_per_node, mesh_size));
  if (gpus_per_node > mesh_size)
    gpus_at.fail(fmt::format("the NVLink mesh (intra_node.nvlink_pairs at {}) describes {} GPUs, got gpus_per_node {}",
                             list.pointer().empty() ? "/" : list.pointer(), mesh_size, gpus_per_node));
  return pairs;
}

/// Whether intra_node.`key` means anything for a node of intra_node.kind `kind`, and what it sets.
bool applies_to_kind(const std::string& key, const std::string& kind, const char** sets)
{
  if (key == "nvlink_lane_gbytes" || key == "nvlink_latency_us") {
    *sets = "the NVLink of kinds nvswitch and nvlink-mesh";
    return kind != "pcie";
  }
  if (key == "nvlink_lanes_per_gpu" || key == "max_gpus") {
    *sets = "an NVSwitch node's links";
    return kind == "nvswitch";
  }
  if (key == "nvlink_pairs") {
    *sets = "the links of kind nvlink-mesh";
    return kind == "nvlink-mesh";
  }
  return true;
}

/// Members of another kind would be ignored: refused where given beside the kind (in the layer that
/// names it or a more specific one, such as the user's file or a --set); a preset's own, below the
/// layer that names the kind, belong to the preset's kind. A null (which removes a base's) is no value.
void refuse_members_of_other_kinds(const LayeredJson& layers, const std::string& kind)
{
  for (const JsonReader& layer : layers.objects_at({"intra_node"})) {
    for (const char* key : {"nvlink_lane_gbytes", "nvlink_latency_us", "nvlink_lanes_per_gpu", "max_gpus", "nvlink_pairs"}) {
      const char* sets = "";
      if (const auto given = layer.find(key); given && !given->json().is_null() && !applies_to_kind(key, kind, &sets))
        given->fail(fmt::format("expected no {} with intra_node.kind {} (it sets {})", key, kind, sets));
    }
    if (layer.find("kind"))
      break;
  }
}

/// A member that only means something beside another's value (gpus_per_pcie_switch beside PCIe
/// switches, cpu_interconnect beside two sockets): refused when given in the layer of that value or a
/// more specific one (a --set of pcie_switches 0 over a preset with switches leaves the preset's alone).
void refuse_unused_beside(const LayeredJson& layers, std::initializer_list<std::string> member,
                          std::initializer_list<std::string> decided_by, const std::string& problem)
{
  const auto given = layers.find(member);
  if (given && !given->json().is_null() && layers.layer_of(member) <= layers.layer_of(decided_by))
    given->fail(problem);
}

}  // namespace

double pcie_bandwidth(int gen, int lanes)
{
  // Transfer rate per lane (GT/s); gen3+ use 128b/130b encoding.
  const double gts = gen == 3 ? 8.0 : gen == 4 ? 16.0 : 32.0;
  return gts * 1e9 * lanes * (128.0 / 130.0) / 8.0;
}

const char* to_string(IntraNodeKind kind)
{
  switch (kind) {
    case IntraNodeKind::NvSwitch: return "nvswitch";
    case IntraNodeKind::NvLinkMesh: return "nvlink-mesh";
    case IntraNodeKind::Pcie: return "pcie";
  }
  return "?";
}

const char* to_string(FabricKind kind)
{
  switch (kind) {
    case FabricKind::Switch: return "switch";
    case FabricKind::FatTree: return "fat-tree";
    case FabricKind::RailOptimized: return "rail-optimized";
  }
  return "?";
}

TopologySpec read_topology_spec(const LayeredJson& layers, const std::string& name, std::optional<int> nodes_override)
{
  check_member_names(layers);
  TopologySpec s;
  s.name = name;
  // Bounds far beyond any link (NVLink 5: 1800 GB/s per GPU; a fabric hop: microseconds) that keep
  // SimGrid's solver within the precision of a double.
  const auto us = [](const JsonReader& r) {
    const double v = r.as_non_negative();
    if (v > 1e6)
      r.fail(fmt::format("expected a latency of at most 1e6 us, got {}", r.json().dump()));
    return v * 1e-6;
  };
  // Rates from 1 MB/s (1 Mb/s for a NIC), far below any link a GPU sits on (at 1e-300 Gb/s an
  // iteration took a 170-digit number of seconds).
  const auto gbytes = [](const JsonReader& r) { return r.as_number_in(1e-3, 1e6) * 1e9; };

  const JsonReader nodes_at = layers.at({"nodes"});
  s.nodes = positive_int(nodes_at);
  if (s.nodes > kMaxNodes)
    nodes_at.fail(fmt::format("expected at most {} nodes, got {}", kMaxNodes, s.nodes));
  if (nodes_override) {
    if (*nodes_override <= 0)
      throw InputError("--nodes", "", fmt::format("expected a positive number of nodes, got {}", *nodes_override));
    if (*nodes_override > kMaxNodes)
      throw InputError("--nodes", "", fmt::format("expected at most {} nodes, got {}", kMaxNodes, *nodes_override));
    s.nodes = *nodes_override;
  }
  const JsonReader gpus_at = layers.at({"gpus_per_node"});
  s.gpus_per_node = positive_int(gpus_at);
  // The largest NVLink domain sold (GB200 NVL72) has 72 GPUs; 256 leaves room for any node.
  if (s.gpus_per_node > 256)
    gpus_at.fail(fmt::format("expected at most 256 GPUs per node, got {}", s.gpus_per_node));
  // Of two members that contradict each other, the one from the more specific layer is blamed: the
  // user's file (or --set) over the preset it names in "base".
  const auto more_specific = [&layers](std::initializer_list<std::string> a, std::initializer_list<std::string> b) {
    return layers.layer_of(a) < layers.layer_of(b);
  };
  if (static_cast<long>(s.nodes) * s.gpus_per_node > 65536 && !nodes_override && more_specific({"nodes"}, {"gpus_per_node"}))
    nodes_at.fail(fmt::format("expected at most 65536 GPUs in all, got {} nodes x {} GPUs", s.nodes, s.gpus_per_node));
  if (static_cast<long>(s.nodes) * s.gpus_per_node > 65536)
    gpus_at.fail(fmt::format("expected at most 65536 GPUs in all, got {} nodes x {} GPUs", s.nodes, s.gpus_per_node));
  const JsonReader gpu_at = layers.at({"gpu"});
  s.gpu = gpu_spec(gpu_at.as_string(), gpu_at.file(), gpu_at.pointer());
  if (auto f = layers.find({"gpu_forwarding"}))
    s.gpu_forwarding = f->as_bool();

  // Inside a node.
  const std::string kind = layers.at({"intra_node", "kind"}).as_choice({"nvswitch", "nvlink-mesh", "pcie"});
  s.intra_kind = kind == "nvswitch" ? IntraNodeKind::NvSwitch : kind == "nvlink-mesh" ? IntraNodeKind::NvLinkMesh : IntraNodeKind::Pcie;
  refuse_members_of_other_kinds(layers, kind);
  if (s.intra_kind != IntraNodeKind::Pcie) {
    s.nvlink_lane_bandwidth = gbytes(layers.at({"intra_node", "nvlink_lane_gbytes"}));
    s.nvlink_latency = us(layers.at({"intra_node", "nvlink_latency_us"}));
  }
  if (s.intra_kind == IntraNodeKind::NvSwitch) {
    s.nvlink_lanes_per_gpu = per_node_count(layers.at({"intra_node", "nvlink_lanes_per_gpu"}), 1);
    const JsonReader max_at = layers.at({"intra_node", "max_gpus"});
    s.max_gpus = positive_int(max_at);
    if (s.gpus_per_node > s.max_gpus && more_specific({"intra_node", "max_gpus"}, {"gpus_per_node"}))
      max_at.fail(fmt::format("expected an NVSwitch fabric that takes the node's {} GPUs (gpus_per_node), got max_gpus {}",
                              s.gpus_per_node, s.max_gpus));
    if (s.gpus_per_node > s.max_gpus)
      gpus_at.fail(fmt::format("the NVSwitch fabric takes at most {} GPUs (intra_node.max_gpus), got gpus_per_node {}",
                               s.max_gpus, s.gpus_per_node));
  }
  if (s.intra_kind == IntraNodeKind::NvLinkMesh)
    s.nvlink_pairs = read_pairs(layers.at({"intra_node", "nvlink_pairs"}), s.gpus_per_node, gpus_at,
                                more_specific({"intra_node", "nvlink_pairs"}, {"gpus_per_node"}));

  s.pcie_gen = pcie_gen_of(layers.at({"intra_node", "pcie_gen"}));
  if (auto lanes = layers.find({"intra_node", "pcie_lanes"})) {
    s.pcie_lanes = static_cast<int>(lanes->as_int_in(1, 16));
    if (s.pcie_lanes != 1 && s.pcie_lanes != 2 && s.pcie_lanes != 4 && s.pcie_lanes != 8 && s.pcie_lanes != 16)
      lanes->fail(fmt::format("expected a PCIe width of 1, 2, 4, 8 or 16 lanes, got {}", s.pcie_lanes));
  }
  s.pcie_latency = us(layers.at({"intra_node", "pcie_latency_us"}));
  if (auto p2p = layers.find({"intra_node", "p2p"}))
    s.p2p = p2p->as_bool();
  if (auto sockets = layers.find({"intra_node", "cpu_sockets"}))
    s.cpu_sockets = per_node_count(*sockets, 1);
  if (auto switches = layers.find({"intra_node", "pcie_switches"}))
    s.pcie_switches = per_node_count(*switches, 0);
  if (s.pcie_switches > 0) {
    const JsonReader per = layers.at({"intra_node", "gpus_per_pcie_switch"});
    s.gpus_per_pcie_switch = per_node_count(per, 1);
    if (s.gpus_per_node > s.pcie_switches * s.gpus_per_pcie_switch) {
      // Blamed on the most specific of the three (gpus_per_node on a tie, then the switches).
      const JsonReader switches_at = layers.at({"intra_node", "pcie_switches"});
      const std::size_t in_gpus = layers.layer_of({"gpus_per_node"});
      const std::size_t in_switches = layers.layer_of({"intra_node", "pcie_switches"});
      const std::size_t in_per = layers.layer_of({"intra_node", "gpus_per_pcie_switch"});
      const JsonReader& blamed = in_gpus <= std::min(in_switches, in_per) ? gpus_at : in_switches <= in_per ? switches_at : per;
      blamed.fail(fmt::format("{} PCIe switches of {} GPUs hold at most {} GPUs, got gpus_per_node {}", s.pcie_switches,
                              s.gpus_per_pcie_switch, s.pcie_switches * s.gpus_per_pcie_switch, s.gpus_per_node));
    }
    if (s.pcie_switches < s.cpu_sockets && more_specific({"intra_node", "cpu_sockets"}, {"intra_node", "pcie_switches"}))
      layers.at({"intra_node", "cpu_sockets"})
          .fail(fmt::format("expected at most one CPU socket per PCIe switch ({} switches), got {}", s.pcie_switches,
                            s.cpu_sockets));
    if (s.pcie_switches < s.cpu_sockets)
      layers.at({"intra_node", "pcie_switches"})
          .fail(fmt::format("expected at least one PCIe switch per CPU socket ({}), got {}", s.cpu_sockets, s.pcie_switches));
  } else {
    refuse_unused_beside(layers, {"intra_node", "gpus_per_pcie_switch"}, {"intra_node", "pcie_switches"},
                         "expected no gpus_per_pcie_switch with intra_node.pcie_switches 0 (the GPUs sit on the CPUs' "
                         "root ports)");
  }
  if (s.cpu_sockets <= 1) {
    refuse_unused_beside(layers, {"intra_node", "cpu_interconnect"}, {"intra_node", "cpu_sockets"},
                         "expected no cpu_interconnect with one CPU socket (intra_node.cpu_sockets: it joins two or more)");
  } else {
    s.cpu_link_bandwidth = gbytes(layers.at({"intra_node", "cpu_interconnect", "gbytes"}));
    s.cpu_link_latency = us(layers.at({"intra_node", "cpu_interconnect", "latency_us"}));
  }

  // The host's CPU cores, shared by the DataLoader workers and the training processes.
  if (auto cores = layers.find({"host", "cores"})) {
    s.host_cores = positive_int(*cores);
    if (s.host_cores > kMaxHostCores)
      cores->fail(fmt::format("expected at most {} CPU cores per node, got {}", kMaxHostCores, s.host_cores));
    if (auto cpu = layers.find({"host", "cpu"}))
      s.host_cpu = cpu->as_string();
    if (auto tpc = layers.find({"host", "threads_per_core"})) {
      s.host_threads_per_core = positive_int(*tpc);
      if (s.host_threads_per_core > 8)
        tpc->fail(fmt::format("expected 1 to 8 hardware threads per core, got {}", s.host_threads_per_core));
    }
    // Per socket: 12 channels of DDR5-8800 are 845 GB/s; 10,000 leaves room.
    if (auto bw = layers.find({"host", "memory_gbytes_per_s_per_socket"}))
      s.host_memory_bandwidth = bw->as_positive_at_most(1e4) * 1e9;
    if (auto max = layers.find({"host", "turbo_ghz", "max"})) {
      const auto all = layers.at({"host", "turbo_ghz", "all_core"});
      s.host_turbo_max_ghz = max->as_positive_at_most(10);
      s.host_turbo_all_core_ghz = all.as_positive_at_most(10);
      if (s.host_turbo_all_core_ghz > s.host_turbo_max_ghz)
        all.fail(fmt::format("expected the all-core turbo at most the one-core turbo ({} GHz), got {}",
                             s.host_turbo_max_ghz, s.host_turbo_all_core_ghz));
    } else if (auto all = layers.find({"host", "turbo_ghz", "all_core"})) {
      all->fail("expected \"max\" (the one-core turbo, GHz) beside \"all_core\"");
    }
  } else {
    for (const char* key : {"cpu", "threads_per_core", "memory_gbytes_per_s_per_socket", "turbo_ghz"})  // not read without the cores: say so, not ignore it
      if (auto v = layers.find({"host", key}))
        v->fail("the host needs \"cores\" (physical CPU cores per node) for this to mean anything");
  }

  // The host's DRAM, which offloaded optimizer states and shards must fit: the largest servers hold
  // 32 TiB (HPE Superdome Flex's 16 sockets of 2 TiB); 65,536 GiB leaves room.
  if (auto dram = layers.find({"host", "memory_gib"}))
    s.host_memory_bytes = dram->as_positive_at_most(65536) * double(1ull << 30);

  // NICs and the network between nodes.
  s.nics_per_node = per_node_count(layers.at({"nic", "count_per_node"}), 0);
  if (s.nics_per_node > 0 || s.nodes > 1) {
    if (s.nics_per_node == 0 && !nodes_override && s.nodes > 1 && more_specific({"nodes"}, {"nic", "count_per_node"}))
      nodes_at.fail(fmt::format("expected 1 node with nic.count_per_node 0 (no network between nodes), got {}", s.nodes));
    if (s.nics_per_node == 0)
      layers.at({"nic", "count_per_node"}).fail(fmt::format("{} nodes need at least one NIC per node, got 0", s.nodes));
    s.nic_bandwidth = layers.at({"nic", "gbps"}).as_number_in(1e-3, 1e7) * 1e9 / 8.0;
    s.nic_latency = us(layers.at({"nic", "latency_us"}));
    s.nic_pcie_gen = s.pcie_gen;
    if (auto gen = layers.find({"nic", "pcie_gen"}))
      s.nic_pcie_gen = pcie_gen_of(*gen);
  }
  if (s.nodes > 1 || layers.find({"fabric", "kind"})) {
    const std::string fabric = layers.at({"fabric", "kind"}).as_choice({"switch", "fat-tree", "rail-optimized"});
    s.fabric = fabric == "switch" ? FabricKind::Switch : fabric == "fat-tree" ? FabricKind::FatTree : FabricKind::RailOptimized;
    s.fabric_latency = us(layers.at({"fabric", "latency_us"}));
    if (auto per_leaf = layers.find({"fabric", "nics_per_leaf"}))
      s.nics_per_leaf = positive_int(*per_leaf);
    // One switch has no leaves to size or uplinks to oversubscribe: these, given beside "switch" (in
    // the layer that names the kind, or a more specific one), would be ignored; a preset's own, under
    // an inline "switch", belong to the preset's fabric.
    if (s.fabric == FabricKind::Switch)
      for (const JsonReader& layer : layers.objects_at({"fabric"})) {
        for (const char* key : {"nics_per_leaf", "oversubscription"})
          if (const auto given = layer.find(key))
            given->fail(fmt::format("expected no {} with fabric kind \"switch\" (it sets a fat-tree's or a "
                                    "rail-optimised fabric's leaves)",
                                    key));
        if (layer.find("kind"))
          break;
      }
    if (auto over = layers.find({"fabric", "oversubscription"})) {
      s.oversubscription = over->as_positive();
      if (s.oversubscription < 1)
        over->fail(fmt::format("expected an oversubscription ratio >= 1 (1 = non-blocking), got {}", s.oversubscription));
    }
  }
  return s;
}

}  // namespace dtsim
