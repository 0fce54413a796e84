// The machine as a graph: devices (GPUs, CPU sockets, PCIe switches, NVSwitches, NICs, network
// switches) joined by full-duplex links. Routes are computed on this graph (Boost.Graph); the
// engine turns it into a SimGrid platform. This header is the contract between the topology
// builders (presets, files) and everything downstream.
#pragma once

#include "sim/topology/gpu_spec.hpp"

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dtsim {

enum class DeviceKind { Gpu, Cpu, PcieSwitch, NvSwitch, Nic, NetworkSwitch };
enum class LinkKind { NvLink, Pcie, CpuInterconnect, Network };

const char* to_string(DeviceKind kind);
const char* to_string(LinkKind kind);

struct Device {
  std::string name;   ///< unique, e.g. "n0.gpu3", "n1.nic0", "leaf2"
  DeviceKind kind;
  int node = -1;      ///< node index, -1 for fabric devices
  int local_index = 0;
};

/// A full-duplex link: `bandwidth` bytes/s in each direction, independently.
struct Link {
  std::string name;
  LinkKind kind;
  int a = -1;         ///< device index
  int b = -1;         ///< device index
  double bandwidth = 0;  ///< bytes/s per direction
  double latency = 0;    ///< seconds
  int lanes = 1;         ///< e.g. 2 for an NV2 pair (bandwidth already includes it)
};

/// One link of a route, crossed from a to b (forward) or from b to a.
struct Hop {
  int link = -1;
  bool forward = true;
  bool operator==(const Hop&) const = default;
};
using Route = std::vector<Hop>;

/// One index per link direction: 2 * link + (forward ? 1 : 0).
inline int directed_link(const Hop& hop) { return 2 * hop.link + (hop.forward ? 1 : 0); }

class Topology {
public:
  int add_device(std::string name, DeviceKind kind, int node = -1, int local_index = 0);
  int add_link(std::string name, LinkKind kind, int a, int b, double bandwidth, double latency, int lanes = 1);
  /// Changes a link's rate and latency (calibration); routes are recomputed on the next query.
  void set_link_rate(int link, double bandwidth, double latency);
  /// Appends a GPU (already added as a device) to the rank order.
  void add_gpu_rank(int device);

  const std::vector<Device>& devices() const { return devices_; }
  const std::vector<Link>& links() const { return links_; }
  /// Device indices of the GPUs, in rank order (node-major).
  const std::vector<int>& gpus() const { return gpus_; }
  int device_index(const std::string& name) const;   ///< -1 when absent

  /// The path a transfer from device `from` to device `to` takes. Shortest by latency-weighted
  /// cost, preferring higher bandwidth (NVLink over PCIe); GPUs never forward traffic for others
  /// unless `gpu_forwarding` is set. Cached. Empty when from == to; throws if unreachable.
  const Route& route(int from, int to) const;
  /// Fixes the route from `from` to `to` that route() returns, until the next change to the machine
  /// (a folded collective's route through links that stand for several: collective_symmetry.hpp).
  void pin_route(int from, int to, Route route);
  /// Bottleneck bandwidth and total latency along a route.
  double route_bandwidth(const Route& route) const;
  double route_latency(const Route& route) const;

  // --- Convenience accessors (added; derived from the lists above) ---
  const Device& device(int index) const { return devices_.at(static_cast<std::size_t>(index)); }
  const Link& link(int index) const { return links_.at(static_cast<std::size_t>(index)); }
  /// Node of GPU rank `rank` (ranks are node-major).
  int node_of(int rank) const;
  /// Device indices of the GPUs of `node`, in rank order.
  std::vector<int> gpus_of_node(int node) const;
  /// Device indices of the NICs of `node`, by local index.
  std::vector<int> nics_of_node(int node) const;
  /// Device indices of every device of a kind, in insertion order.
  std::vector<int> devices_of_kind(DeviceKind kind) const;
  /// Number of links of a kind.
  int count_links(LinkKind kind) const;
  /// Link indices of the links joining a and b directly (either orientation).
  std::vector<int> links_between(int a, int b) const;
  /// Link indices attached to a device.
  std::vector<int> links_of(int device) const;
  /// Device indices of the devices of `node` (any kind), in insertion order.
  std::vector<int> devices_of_node(int node) const;

  std::string name;          ///< preset or file it came from
  /// Where the cluster names its calibration file ("calibration", read over the "base" chain as every
  /// other member is): the path as written, the file that names it and the JSON pointer, so the path
  /// resolves beside that file and a missing one is that file's error. Unset for presets and clusters
  /// that name none; calibration/calibration_apply.cpp loads it.
  struct FileReference {
    std::string value, file, pointer;
  };
  std::optional<FileReference> calibration;
  GpuSpec gpu;               ///< every GPU of the cluster is of this kind
  int nodes = 1;
  int gpus_per_node = 0;
  bool gpu_forwarding = false;
  /// PCIe peer-to-peer between GPUs. When false, a transfer from a GPU to another GPU or to a NIC
  /// that does not use NVLink is staged through host memory: GPU -> its CPU socket -> destination.
  bool pcie_p2p = true;
  /// The CPUs of one node, which run the training processes and their DataLoader workers.
  struct Host {
    std::string cpu;           ///< e.g. "2 x Xeon E5-2698 v4"
    int cores = 0;             ///< physical cores per node (0: not given)
    int threads_per_core = 1;  ///< SMT threads per core
    int sockets = 1;           ///< CPU sockets per node (intra_node cpu_sockets)
    /// Peak DRAM bandwidth of one socket (bytes/s: channels x transfer rate x 8 bytes, the vendor's
    /// figure); 0: not given, not modelled.
    double memory_bytes_per_s_per_socket = 0;
    /// DRAM per node (bytes; host.memory_gib); 0: not given, offloaded state not checked against it.
    double memory_bytes = 0;
    /// Vendor turbo figures (GHz; 0: not given): with one core of a socket busy, and with all of them.
    double turbo_max_ghz = 0;
    double turbo_all_core_ghz = 0;
    /// A measured load curve (dtsim calibrate of calibration/bench/host_costs.py's JSON, applied by
    /// apply_calibration): (fraction of the cores busy, cost of a sample there over one busy core's),
    /// in order. Empty: the default curve (sim/strategies/host_model.hpp).
    std::vector<std::pair<double, double>> load_curve;
    std::string load_curve_source;
    /// Measured rates of a copy from pageable host memory to a GPU and back (bytes/s, bandwidthTest's
    /// pageable rows: a calibration file's host_device h2d_pageable_GBps and d2h_pageable_GBps,
    /// applied by apply_calibration); 0: not measured (sim/strategies/loader.hpp's default).
    double pageable_h2d_bytes_per_s = 0;
    double pageable_d2h_bytes_per_s = 0;
  } host;

private:
  std::vector<Device> devices_;
  std::vector<Link> links_;
  std::vector<int> gpus_;
  std::map<std::string, int> by_name_;
  /// Adjacency and per-node / per-kind device lists, built on first use after a change, so that
  /// the accessors above cost what they return, not a scan of every device or link.
  struct Index;
  mutable std::shared_ptr<const Index> index_;
  const Index& index() const;
  /// Per node the links a route may use (topology_routing.cpp), built once per change of the machine.
  struct RoutingGraph;
  mutable std::shared_ptr<const RoutingGraph> routing_graph_;
  /// Hash of a (device, device) or (device, node) pair for the caches below.
  struct PairHash {
    std::size_t operator()(const std::pair<int, int>& p) const
    {
      return std::hash<unsigned long long>()((static_cast<unsigned long long>(static_cast<unsigned>(p.first)) << 32) |
                                             static_cast<unsigned>(p.second));
    }
  };
  /// Routes computed so far, and per route source and destination node the hop by which Dijkstra
  /// reached each device it reached. Derived from the machine: a copy of the topology starts
  /// without them (a folded machine, collective_symmetry.hpp, copies a topology at scale).
  struct RouteCaches {
    RouteCaches() = default;
    RouteCaches(const RouteCaches&) {}
    RouteCaches& operator=(const RouteCaches&)
    {
      clear();
      return *this;
    }
    void clear()
    {
      routes.clear();
      by_source.clear();
      arrivals.clear();
      last = {};
    }
    /// The route from `from` to `to` computed so far, or null.
    const Route* find(int from, int to) const;
    /// Keeps `route` as the one from `from` to `to`.
    const Route& add(int from, int to, Route route);
    /// Routes computed so far, at stable addresses, found through their source: a device's few
    /// destinations in a short list (one cache line, where one hash map of millions of routes
    /// missed the cache on every look-up at scale), in a hash map of its own once it has many.
    std::deque<Route> routes;
    struct FromOne {
      std::vector<std::pair<int, const Route*>> few;
      std::unordered_map<int, const Route*> many;
    };
    std::vector<FromOne> by_source;
    std::unordered_map<std::pair<int, int>, std::unordered_map<int, Hop>, PairHash> arrivals;
    /// The route returned last (a stream's transfers ask for the same pair one after the other:
    /// no look-up at all for them).
    struct Last {
      int from = -1, to = -1;
      const Route* route = nullptr;
    } last;
  };
  mutable RouteCaches caches_;
  /// Routes fixed by pin_route (kept by a copy; dropped by a change to the machine).
  mutable std::unordered_map<std::pair<int, int>, Route, PairHash> pinned_;
  mutable bool cached_forwarding_ = false; ///< gpu_forwarding the caches were computed with
  mutable bool cached_p2p_ = true;         ///< pcie_p2p the caches were computed with
  void reset_routes() const;
  const std::unordered_map<int, Hop>& arrivals_from(int from, int to_node) const;
  Route shortest_route(int from, int to) const;
};

}  // namespace dtsim
