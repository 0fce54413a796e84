// Topology graph: routes are shortest in hops, prefer bandwidth, never relay through a GPU.
#include "sim/topology/topology.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

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

namespace {
/// The links of a route, by name, joined with spaces.
std::string names(const Topology& t, const Route& r)
{
  std::string out;
  for (const Hop& h : r)
    out += (out.empty() ? "" : " ") + t.link(h.link).name;
  return out;
}
}  // namespace

TEST_CASE("a route takes only the switches it needs: dead-end leaves and chains of a tree fabric")
{
  // A three-level tree: leaves l0..l3 (one GPU each, nodes 0..3) under aggregation switches a0 (l0,
  // l1) and a1 (l2, l3), both under a core switch; a leaf l4 with no node hangs off a1, and a
  // chain x0 - x1 off the core. Routes between nodes go up to the lowest switch above both.
  Topology t;
  std::vector<int> gpus, leaves;
  for (int n = 0; n < 4; ++n)
    gpus.push_back(t.add_device(fmt::format("n{}.gpu", n), DeviceKind::Gpu, n, 0));
  for (int l = 0; l < 5; ++l)
    leaves.push_back(t.add_device(fmt::format("l{}", l), DeviceKind::NetworkSwitch, -1, l));
  const int a0 = t.add_device("a0", DeviceKind::NetworkSwitch, -1, 0);
  const int a1 = t.add_device("a1", DeviceKind::NetworkSwitch, -1, 1);
  const int core = t.add_device("core", DeviceKind::NetworkSwitch, -1, 0);
  const int x0 = t.add_device("x0", DeviceKind::NetworkSwitch, -1, 0);
  const int x1 = t.add_device("x1", DeviceKind::NetworkSwitch, -1, 1);
  for (int n = 0; n < 4; ++n)
    t.add_link(fmt::format("g{}-l{}", n, n), LinkKind::Network, gpus[static_cast<std::size_t>(n)],
               leaves[static_cast<std::size_t>(n)], 50e9, 1e-6);
  t.add_link("l0-a0", LinkKind::Network, leaves[0], a0, 50e9, 1e-6);
  t.add_link("l1-a0", LinkKind::Network, leaves[1], a0, 50e9, 1e-6);
  t.add_link("l2-a1", LinkKind::Network, leaves[2], a1, 50e9, 1e-6);
  t.add_link("l3-a1", LinkKind::Network, leaves[3], a1, 50e9, 1e-6);
  t.add_link("l4-a1", LinkKind::Network, leaves[4], a1, 50e9, 1e-6);
  t.add_link("a0-core", LinkKind::Network, a0, core, 50e9, 1e-6);
  t.add_link("a1-core", LinkKind::Network, a1, core, 50e9, 1e-6);
  t.add_link("a1-core.2", LinkKind::Network, a1, core, 100e9, 1e-6);  // a second, faster uplink
  t.add_link("core-x0", LinkKind::Network, core, x0, 50e9, 1e-6);
  t.add_link("x0-x1", LinkKind::Network, x0, x1, 50e9, 1e-6);
  for (int g : gpus)
    t.add_gpu_rank(g);
  CHECK(names(t, t.route(gpus[0], gpus[1])) == "g0-l0 l0-a0 l1-a0 g1-l1");
  CHECK(names(t, t.route(gpus[0], gpus[3])) == "g0-l0 l0-a0 a0-core a1-core.2 l3-a1 g3-l3");
  CHECK(names(t, t.route(gpus[3], gpus[2])) == "g3-l3 l3-a1 l2-a1 g2-l2");
  // A route to or from a switch takes the whole fabric.
  CHECK(names(t, t.route(gpus[1], x1)) == "g1-l1 l1-a0 a0-core core-x0 x0-x1");
  CHECK(names(t, t.route(leaves[4], gpus[0])) == "l4-a1 a1-core.2 a0-core l0-a0 g0-l0");
}

TEST_CASE("a fabric with a cycle keeps it: two spines under every leaf")
{
  // Leaves l0 and l1 (one GPU each) both go up to spines s0 (slow) and s1 (fast): no switch
  // hangs off one neighbour, so both spines stay and the route takes the faster one.
  Topology t;
  const int g0 = t.add_device("n0.gpu", DeviceKind::Gpu, 0, 0);
  const int g1 = t.add_device("n1.gpu", DeviceKind::Gpu, 1, 0);
  const int l0 = t.add_device("l0", DeviceKind::NetworkSwitch, -1, 0);
  const int l1 = t.add_device("l1", DeviceKind::NetworkSwitch, -1, 1);
  const int s0 = t.add_device("s0", DeviceKind::NetworkSwitch, -1, 0);
  const int s1 = t.add_device("s1", DeviceKind::NetworkSwitch, -1, 1);
  t.add_link("g0-l0", LinkKind::Network, g0, l0, 50e9, 1e-6);
  t.add_link("g1-l1", LinkKind::Network, g1, l1, 50e9, 1e-6);
  t.add_link("l0-s0", LinkKind::Network, l0, s0, 10e9, 1e-6);
  t.add_link("l1-s0", LinkKind::Network, l1, s0, 10e9, 1e-6);
  t.add_link("l0-s1", LinkKind::Network, l0, s1, 100e9, 1e-6);
  t.add_link("l1-s1", LinkKind::Network, l1, s1, 100e9, 1e-6);
  for (int g : {g0, g1})
    t.add_gpu_rank(g);
  CHECK(names(t, t.route(g0, g1)) == "g0-l0 l0-s1 l1-s1 g1-l1");
}
