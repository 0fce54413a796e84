// The machine graph: devices, links, GPU rank order and accessors (routing: topology_routing.cpp).
#include "sim/topology/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace dtsim {

const char* to_string(DeviceKind kind)
{
  switch (kind) {
    case DeviceKind::Gpu: return "gpu";
    case DeviceKind::Cpu: return "cpu";
    case DeviceKind::PcieSwitch: return "pcie-switch";
    case DeviceKind::NvSwitch: return "nvswitch";
    case DeviceKind::Nic: return "nic";
    case DeviceKind::NetworkSwitch: return "network-switch";
  }
  return "?";
}

const char* to_string(LinkKind kind)
{
  switch (kind) {
    case LinkKind::NvLink: return "nvlink";
    case LinkKind::Pcie: return "pcie";
    case LinkKind::CpuInterconnect: return "cpu-interconnect";
    case LinkKind::Network: return "network";
  }
  return "?";
}

int Topology::add_device(std::string name, DeviceKind kind, int node, int local_index)
{
  if (by_name_.count(name))
    throw std::invalid_argument(fmt::format("duplicate device name \"{}\"", name));
  const int index = static_cast<int>(devices_.size());
  by_name_[name] = index;
  devices_.push_back(Device{std::move(name), kind, node, local_index});
  reset_routes();
  return index;
}

int Topology::add_link(std::string name, LinkKind kind, int a, int b, double bandwidth, double latency, int lanes)
{
  const int n = static_cast<int>(devices_.size());
  if (a < 0 || a >= n || b < 0 || b >= n || a == b)
    throw std::invalid_argument(fmt::format("link \"{}\" joins invalid devices {} and {}", name, a, b));
  const int index = static_cast<int>(links_.size());
  links_.push_back(Link{std::move(name), kind, a, b, bandwidth, latency, lanes});
  reset_routes();
  return index;
}

void Topology::set_link_rate(int link, double bandwidth, double latency)
{
  if (link < 0 || link >= static_cast<int>(links_.size()))
    throw std::invalid_argument(fmt::format("no link {}", link));
  links_[static_cast<std::size_t>(link)].bandwidth = bandwidth;
  links_[static_cast<std::size_t>(link)].latency = latency;
  reset_routes();
}

void Topology::add_gpu_rank(int device)
{
  if (device < 0 || device >= static_cast<int>(devices_.size()) || devices_[device].kind != DeviceKind::Gpu)
    throw std::invalid_argument(fmt::format("device {} is not a GPU", device));
  gpus_.push_back(device);
  index_.reset();
}

int Topology::device_index(const std::string& name) const
{
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

int Topology::node_of(int rank) const
{
  return devices_.at(static_cast<std::size_t>(gpus_.at(static_cast<std::size_t>(rank)))).node;
}

struct Topology::Index {
  std::vector<std::vector<int>> links_of_device;  ///< link indices, ascending
  std::vector<std::vector<int>> devices_of_node;  ///< device indices, ascending
  std::vector<std::vector<int>> gpus_of_node;     ///< in rank order
  std::vector<std::vector<int>> nics_of_node;     ///< by local index (stable)
  std::map<DeviceKind, std::vector<int>> devices_of_kind;
};

const Topology::Index& Topology::index() const
{
  if (index_)
    return *index_;
  auto ix = std::make_shared<Index>();
  ix->links_of_device.resize(devices_.size());
  for (int i = 0; i < static_cast<int>(links_.size()); ++i) {
    const Link& l = links_[static_cast<std::size_t>(i)];
    ix->links_of_device[static_cast<std::size_t>(l.a)].push_back(i);
    ix->links_of_device[static_cast<std::size_t>(l.b)].push_back(i);
  }
  const auto node_slot = [](std::vector<std::vector<int>>& by_node, int node) -> std::vector<int>& {
    if (static_cast<std::size_t>(node) >= by_node.size())
      by_node.resize(static_cast<std::size_t>(node) + 1);
    return by_node[static_cast<std::size_t>(node)];
  };
  for (int i = 0; i < static_cast<int>(devices_.size()); ++i) {
    const Device& d = devices_[static_cast<std::size_t>(i)];
    ix->devices_of_kind[d.kind].push_back(i);
    if (d.node < 0)
      continue;
    node_slot(ix->devices_of_node, d.node).push_back(i);
    if (d.kind == DeviceKind::Nic)
      node_slot(ix->nics_of_node, d.node).push_back(i);
  }
  for (auto& nics : ix->nics_of_node) {
    std::stable_sort(nics.begin(), nics.end(),
                     [this](int x, int y) { return devices_[x].local_index < devices_[y].local_index; });
  }
  for (int d : gpus_) {
    const int node = devices_[static_cast<std::size_t>(d)].node;
    if (node >= 0)
      node_slot(ix->gpus_of_node, node).push_back(d);
  }
  index_ = std::move(ix);
  return *index_;
}

namespace {
std::vector<int> slot_or_empty(const std::vector<std::vector<int>>& by_node, int node)
{
  if (node < 0 || static_cast<std::size_t>(node) >= by_node.size())
    return {};
  return by_node[static_cast<std::size_t>(node)];
}
}  // namespace

std::vector<int> Topology::gpus_of_node(int node) const
{
  return slot_or_empty(index().gpus_of_node, node);
}

std::vector<int> Topology::nics_of_node(int node) const
{
  return slot_or_empty(index().nics_of_node, node);
}

std::vector<int> Topology::devices_of_node(int node) const
{
  return slot_or_empty(index().devices_of_node, node);
}

std::vector<int> Topology::devices_of_kind(DeviceKind kind) const
{
  const auto& by_kind = index().devices_of_kind;
  const auto it = by_kind.find(kind);
  return it == by_kind.end() ? std::vector<int>{} : it->second;
}

int Topology::count_links(LinkKind kind) const
{
  return static_cast<int>(std::count_if(links_.begin(), links_.end(), [kind](const Link& l) { return l.kind == kind; }));
}

std::vector<int> Topology::links_between(int a, int b) const
{
  std::vector<int> out;
  if (a < 0 || a >= static_cast<int>(devices_.size()))
    return out;
  for (int i : index().links_of_device[static_cast<std::size_t>(a)]) {
    const Link& l = links_[static_cast<std::size_t>(i)];
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a))
      out.push_back(i);
  }
  return out;
}

std::vector<int> Topology::links_of(int device) const
{
  if (device < 0 || device >= static_cast<int>(devices_.size()))
    return {};
  return index().links_of_device[static_cast<std::size_t>(device)];
}

}  // namespace dtsim
