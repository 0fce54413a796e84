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

std::vector<int> Topology::gpus_of_node(int node) const
{
  std::vector<int> out;
  for (int d : gpus_)
    if (devices_[static_cast<std::size_t>(d)].node == node)
      out.push_back(d);
  return out;
}

std::vector<int> Topology::nics_of_node(int node) const
{
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(devices_.size()); ++i)
    if (devices_[i].kind == DeviceKind::Nic && devices_[i].node == node)
      out.push_back(i);
  std::stable_sort(out.begin(), out.end(),
                   [this](int x, int y) { return devices_[x].local_index < devices_[y].local_index; });
  return out;
}

std::vector<int> Topology::devices_of_kind(DeviceKind kind) const
{
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(devices_.size()); ++i)
    if (devices_[i].kind == kind)
      out.push_back(i);
  return out;
}

int Topology::count_links(LinkKind kind) const
{
  return static_cast<int>(std::count_if(links_.begin(), links_.end(), [kind](const Link& l) { return l.kind == kind; }));
}

std::vector<int> Topology::links_between(int a, int b) const
{
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(links_.size()); ++i)
    if ((links_[i].a == a && links_[i].b == b) || (links_[i].a == b && links_[i].b == a))
      out.push_back(i);
  return out;
}

std::vector<int> Topology::links_of(int device) const
{
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(links_.size()); ++i)
    if (links_[i].a == device || links_[i].b == device)
      out.push_back(i);
  return out;
}

}  // namespace dtsim
