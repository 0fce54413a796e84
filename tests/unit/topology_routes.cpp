// Topology graph: routes are shortest in hops, prefer bandwidth, never relay through a GPU.
#include "sim/topology/topology.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace dtsim;

namespace {
// Two GPUs on one PCIe switch, also joined through an NVSwitch; a third GPU hangs off GPU 1 only
// by NVLink, and a fourth one is on the switch.
Topology small_box()
{
  Topology t;
  const int g0 = t.add_device("g0", DeviceKind::Gpu, 0, 0);
  const int g1 = t.add_device("g1", DeviceKind::Gpu, 0, 1);
  const int g2 = t.add_device("g2", DeviceKind::Gpu, 0, 2);
  const int sw = t.add_device("pcie", DeviceKind::PcieSwitch, 0, 0);
  const int nvs = t.add_device("nvs", DeviceKind::NvSwitch, 0, 0);
  t.add_link("g0-pcie", LinkKind::Pcie, g0, sw, 16e9, 1e-6);
  t.add_link("g1-pcie", LinkKind::Pcie, g1, sw, 16e9, 1e-6);
  t.add_link("g0-nvs", LinkKind::NvLink, g0, nvs, 300e9, 0.5e-6, 12);
  t.add_link("g1-nvs", LinkKind::NvLink, g1, nvs, 300e9, 0.5e-6, 12);
  t.add_link("g1-g2", LinkKind::NvLink, g1, g2, 50e9, 0.5e-6, 2);
  for (int g : {g0, g1, g2})
    t.add_gpu_rank(g);
  return t;
}
}  // namespace

TEST_CASE("equal hop counts: the higher-bandwidth path wins")
{
  Topology t = small_box();
  const Route& r = t.route(t.device_index("g0"), t.device_index("g1"));
  REQUIRE(r.size() == 2);
  CHECK(t.link(r[0].link).name == "g0-nvs");
  CHECK(r[0].forward);
  CHECK(t.link(r[1].link).name == "g1-nvs");
  CHECK_FALSE(r[1].forward);
  CHECK(t.route_bandwidth(r) == doctest::Approx(300e9));
  CHECK(t.route_latency(r) == doctest::Approx(1e-6));
}

TEST_CASE("GPUs do not relay unless gpu_forwarding is set")
{
  Topology t = small_box();
  CHECK_THROWS_AS(t.route(t.device_index("g0"), t.device_index("g2")), std::runtime_error);
  t.gpu_forwarding = true;
  const Route& r = t.route(t.device_index("g0"), t.device_index("g2"));
  CHECK(r.size() == 3);
  CHECK(t.route_bandwidth(r) == doctest::Approx(50e9));
  // The route from a GPU to its own neighbour is direct either way.
  CHECK(t.route(t.device_index("g2"), t.device_index("g1")).size() == 1);
}

TEST_CASE("nodes do not relay: a route enters no node but its ends")
{
  // Nodes 0 and 1 reach each other through a slow spine or, as many hops and faster, through a
  // dual-port NIC of node 2 on both leaves; the route takes the spine.
  Topology t;
  const int g0 = t.add_device("n0.gpu", DeviceKind::Gpu, 0, 0);
  const int g1 = t.add_device("n1.gpu", DeviceKind::Gpu, 1, 0);
  const int nic = t.add_device("n2.nic", DeviceKind::Nic, 2, 0);
  const int s0 = t.add_device("leaf0", DeviceKind::NetworkSwitch, -1, 0);
  const int s1 = t.add_device("leaf1", DeviceKind::NetworkSwitch, -1, 1);
  const int spine = t.add_device("spine", DeviceKind::NetworkSwitch, -1, 0);
  t.add_link("g0-leaf0", LinkKind::Network, g0, s0, 50e9, 1e-6);
  t.add_link("g1-leaf1", LinkKind::Network, g1, s1, 50e9, 1e-6);
  t.add_link("leaf0-n2", LinkKind::Network, s0, nic, 50e9, 1e-6);
  t.add_link("n2-leaf1", LinkKind::Network, nic, s1, 50e9, 1e-6);
  t.add_link("leaf0-spine", LinkKind::Network, s0, spine, 10e9, 1e-6);
  t.add_link("spine-leaf1", LinkKind::Network, spine, s1, 10e9, 1e-6);
  for (int g : {g0, g1})
    t.add_gpu_rank(g);
  const Route& r = t.route(g0, g1);
  REQUIRE(r.size() == 4);
  CHECK(t.link(r[1].link).name == "leaf0-spine");
  CHECK(t.route_bandwidth(r) == doctest::Approx(10e9));
  // Node 2's devices are reached as the end of a route.
  CHECK(t.route(g0, nic).size() == 2);
}

TEST_CASE("route to self is empty; accessors")
{
  Topology t = small_box();
  CHECK(t.route(0, 0).empty());
  CHECK(t.device_index("nope") == -1);
  CHECK(t.count_links(LinkKind::NvLink) == 3);
  CHECK(t.count_links(LinkKind::Pcie) == 2);
  CHECK(t.gpus_of_node(0).size() == 3);
  CHECK(t.node_of(2) == 0);
  CHECK(t.links_between(t.device_index("g1"), t.device_index("g2")).size() == 1);
  CHECK(std::string(to_string(DeviceKind::NvSwitch)) == "nvswitch");
  CHECK(std::string(to_string(LinkKind::CpuInterconnect)) == "cpu-interconnect");
}

TEST_CASE("a pinned route replaces the one asked for just before; a change to the machine drops it")
{
  Topology t = small_box();
  const int g0 = t.device_index("g0"), g1 = t.device_index("g1");
  REQUIRE(t.route(g0, g1).size() == 2);
  CHECK(t.link(t.route(g0, g1)[0].link).name == "g0-nvs");
  const int pcie = t.links_between(g0, t.device_index("pcie"))[0];
  const int up = t.links_between(g1, t.device_index("pcie"))[0];
  t.pin_route(g0, g1, {{pcie, true}, {up, false}});
  CHECK(t.link(t.route(g0, g1)[0].link).name == "g0-pcie");
  CHECK(t.link(t.route(g0, g1)[0].link).name == "g0-pcie");  // asked twice in a row
  t.add_link("g0-g1", LinkKind::NvLink, g0, g1, 50e9, 0.5e-6, 2);
  REQUIRE(t.route(g0, g1).size() == 1);
  CHECK(t.link(t.route(g0, g1)[0].link).name == "g0-g1");
}
