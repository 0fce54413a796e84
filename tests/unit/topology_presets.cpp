// Every preset builds, passes the checks and has the links and routes of the real machine.
#include "sim/topology/topology_analysis.hpp"
#include "sim/topology/topology_builder.hpp"
#include "sim/topology/topology_check.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using namespace dtsim;

namespace {

Topology inline_cluster(const std::string& text)
{
  static std::vector<std::unique_ptr<nlohmann::json>> keep;
  keep.push_back(std::make_unique<nlohmann::json>(nlohmann::json::parse(text)));
  return build_topology(JsonReader(*keep.back(), "scenario.json", "/cluster"));
}

int dev(const Topology& t, const std::string& name)
{
  const int d = t.device_index(name);
  REQUIRE_MESSAGE(d >= 0, name);
  return d;
}

bool route_crosses(const Topology& t, const std::string& from, const std::string& to, const std::string& device)
{
  const int target = dev(t, device);
  for (const Hop& h : t.route(dev(t, from), dev(t, to))) {
    const Link& l = t.link(h.link);
    if (l.a == target || l.b == target)
      return true;
  }
  return false;
}

/// The NV1/NV2/SYS matrix printed in the header of the measured DGX-1 log.
std::vector<std::vector<std::string>> dgx1_matrix_from_validation_file()
{
  std::ifstream in(std::string(DTSIM_VALIDATION_DIR) + "/nccl/8xV100_SXM2_16GB_hybridcubemesh_allreduce.txt");
  REQUIRE(in);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("#GPU", 0) != 0)
      continue;
    std::istringstream cells(line.substr(1));
    std::string cell;
    std::vector<std::string> row;
    cells >> cell;  // row label
    while (cells >> cell)
      row.push_back(cell);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST_CASE("every preset builds and passes the checks, on one node and on three")
{
  const auto names = topology_preset_names();
  CHECK(names == std::vector<std::string>{"dgx-a100", "dgx-b200", "dgx1-v100", "dgx2-v100", "hgx-h100", "pcie-box"});
  for (const auto& name : names) {
    for (int nodes : {1, 3}) {
      CAPTURE(name);
      CAPTURE(nodes);
      const Topology t = load_topology(name, nodes);
      CHECK(t.name == name);
      CHECK(t.nodes == nodes);
      CHECK(static_cast<int>(t.gpus().size()) == nodes * t.gpus_per_node);
      CHECK(topology_problems(t).empty());
      CHECK(t.node_of(static_cast<int>(t.gpus().size()) - 1) == nodes - 1);
    }
  }
}

TEST_CASE("dgx1-v100 reproduces the DGX-1 NV1/NV2 matrix of the measured machine")
{
  const Topology t = load_topology("dgx1-v100");
  const auto expected = dgx1_matrix_from_validation_file();
  REQUIRE(expected.size() == 8);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      CAPTURE(a);
      CAPTURE(b);
      CHECK(path_type(t, t.gpus()[a], t.gpus()[b]) == expected[a][b]);
    }
  CHECK(t.count_links(LinkKind::NvLink) == 16);
  for (int r = 0; r < 8; ++r) {
    const auto inj = injection_bandwidth(t, r);
    CHECK(inj.nvlink_lanes == 6);  // 6 NVLink2 links per V100
    CHECK(inj.nvlink == doctest::Approx(150e9));
  }
  CHECK(t.devices_of_kind(DeviceKind::PcieSwitch).size() == 4);
  CHECK(t.devices_of_kind(DeviceKind::Cpu).size() == 2);
  CHECK(t.nics_of_node(0).size() == 4);
  // NV-connected pairs talk directly; others go over PCIe and QPI.
  CHECK(t.route(dev(t, "n0.gpu0"), dev(t, "n0.gpu3")).size() == 1);
  CHECK(t.route_bandwidth(t.route(dev(t, "n0.gpu0"), dev(t, "n0.gpu3"))) == doctest::Approx(50e9));
  CHECK(route_crosses(t, "n0.gpu0", "n0.gpu4", "n0.cpu1"));
  // Bisection: 6 NVLink lanes cross the quads (150 GB/s) plus PCIe into two switches (2 x 15.75).
  CHECK(bisection_bandwidth(t) == doctest::Approx(150e9 + 2 * 8e9 * 16 * 128 / 130 / 8));
}

TEST_CASE("dgx1-v100 over 4 nodes with one NIC each: the NIC sits on the first PCIe switch")
{
  const Topology t = inline_cluster(R"({"base": "dgx1-v100", "nodes": 4, "nic": {"count_per_node": 1, "gbps": 100}})");
  CHECK(t.gpus().size() == 32);
  CHECK(t.devices_of_kind(DeviceKind::Nic).size() == 4);
  CHECK(t.links_between(dev(t, "n2.nic0"), dev(t, "n2.pcie0")).size() == 1);
  CHECK(t.links_between(dev(t, "n2.nic0"), dev(t, "fabric.switch")).size() == 1);
  CHECK(route_crosses(t, "n0.gpu7", "n3.gpu7", "n0.nic0"));
  CHECK(t.route_bandwidth(t.route(dev(t, "n0.gpu0"), dev(t, "n1.gpu0"))) == doctest::Approx(12.5e9));
  CHECK(bisection_bandwidth(t) == doctest::Approx(2 * 12.5e9));  // 2 nodes' NICs on each side
}

TEST_CASE("fewer NICs than PCIe switches: NIC i beside the first GPU of the i-th share, the GPUs NCCL gives it")
{
  // dgx1-v100 has 4 PCIe switches of 2 GPUs; with 2 NICs, NIC 1 goes to switch 2 (GPUs 4-7's share,
  // as Expansion::nic_of deals them: GPU g uses NIC g x 2 / 8), not to switch 1 beside GPUs 2 and 3.
  const Topology t = inline_cluster(R"({"base": "dgx1-v100", "nodes": 2, "nic": {"count_per_node": 2, "gbps": 100}})");
  CHECK(t.links_between(dev(t, "n1.nic0"), dev(t, "n1.pcie0")).size() == 1);
  CHECK(t.links_between(dev(t, "n1.nic1"), dev(t, "n1.pcie2")).size() == 1);
  CHECK(t.links_between(dev(t, "n1.nic1"), dev(t, "n1.pcie1")).empty());
}

TEST_CASE("hgx-h100 on 4 nodes: 32 GPUs, 32 NICs, rail-optimised leaves")
{
  const Topology t = load_topology("hgx-h100", 4);
  CHECK(t.gpus().size() == 32);
  CHECK(t.devices_of_kind(DeviceKind::Nic).size() == 32);
  CHECK(t.devices_of_kind(DeviceKind::NetworkSwitch).size() == 9);  // 8 rails + spine
  CHECK(path_type(t, t.gpus()[0], t.gpus()[7]) == "NV18");
  CHECK(path_type(t, t.gpus()[0], t.gpus()[8]) == "NET");
  CHECK(path_type(t, dev(t, "n0.gpu3"), dev(t, "n0.nic3")) == "PIX");
  const auto inj = injection_bandwidth(t, 0);
  CHECK(inj.nvlink == doctest::Approx(450e9));
  CHECK(inj.network == doctest::Approx(50e9));
  // GPU i of one node reaches GPU i of another over its own rail only.
  CHECK(route_crosses(t, "n0.gpu5", "n3.gpu5", "fabric.rail5"));
  CHECK_FALSE(route_crosses(t, "n0.gpu5", "n3.gpu5", "fabric.spine"));
  CHECK(t.route(dev(t, "n0.gpu5"), dev(t, "n3.gpu5")).size() == 6);
  CHECK(bisection_bandwidth(t) == doctest::Approx(16 * 50e9));
}

TEST_CASE("dgx-b200 on 2 nodes: NVLink5 through the NVSwitch, a 400 Gb/s rail per GPU")
{
  const Topology t = load_topology("dgx-b200", 2);
  CHECK(t.gpu.name == "B200");
  CHECK(t.gpus().size() == 16);
  CHECK(path_type(t, t.gpus()[0], t.gpus()[7]) == "NV18");
  CHECK(path_type(t, t.gpus()[0], t.gpus()[8]) == "NET");
  CHECK(path_type(t, dev(t, "n0.gpu3"), dev(t, "n0.nic3")) == "PIX");
  const auto inj = injection_bandwidth(t, 0);
  CHECK(inj.nvlink == doctest::Approx(900e9));  // 18 x 50 GB/s per direction
  CHECK(inj.network == doctest::Approx(50e9));
  CHECK(route_crosses(t, "n0.gpu5", "n1.gpu5", "fabric.rail5"));
  // NCCL's topology search counts a Blackwell (SM100) NVLink at 40.1 GB/s.
  const Link& nvs = t.link(t.links_between(t.gpus()[0], t.device_index("n0.nvswitch")).at(0));
  CHECK(nccl_link_bandwidth(t, nvs) == doctest::Approx(18 * 40.1e9));
}

TEST_CASE("dgx-a100 and dgx2-v100 on NVSwitch")
{
  const Topology a = load_topology("dgx-a100");
  CHECK(path_type(a, a.gpus()[0], a.gpus()[5]) == "NV12");
  CHECK(a.route_bandwidth(a.route(a.gpus()[0], a.gpus()[5])) == doctest::Approx(300e9));
  CHECK(path_type(a, dev(a, "n0.gpu1"), dev(a, "n0.nic0")) == "PIX");  // 2 GPUs + 2 NICs per switch
  CHECK(path_type(a, dev(a, "n0.gpu2"), dev(a, "n0.nic0")) == "NODE");
  // 4 GPUs x 300 GB/s of NVLink, plus PCIe gen4 into the other socket's two switches.
  CHECK(bisection_bandwidth(a) == doctest::Approx(4 * 300e9 + 2 * 16e9 * 16 * 128 / 130 / 8));

  const Topology d = load_topology("dgx2-v100");
  CHECK(d.gpus().size() == 16);
  CHECK(path_type(d, d.gpus()[0], d.gpus()[15]) == "NV6");
  // NVIDIA's "2.4 TB/s bisection" is 8 GPUs x 150 GB/s in each direction; the graph adds the
  // PCIe path, bounded by the 62.4 GB/s UPI link between the sockets.
  CHECK(bisection_bandwidth(d) == doctest::Approx(8 * 150e9 + 62.4e9));
}

TEST_CASE("dgx-a100 fat-tree: leaves of nics_per_leaf NICs under an aggregate spine")
{
  const Topology t = inline_cluster(
      R"({"base": "dgx-a100", "nodes": 4, "fabric": {"kind": "fat-tree", "nics_per_leaf": 16, "oversubscription": 2}})");
  CHECK(t.devices_of_kind(DeviceKind::NetworkSwitch).size() == 3);  // 2 leaves + spine
  CHECK(route_crosses(t, "n0.gpu0", "n1.gpu0", "fabric.leaf0"));
  CHECK_FALSE(route_crosses(t, "n0.gpu0", "n1.gpu0", "fabric.spine"));
  CHECK(route_crosses(t, "n0.gpu0", "n2.gpu0", "fabric.spine"));
  // Leaf uplink: 16 ports x 25 GB/s / 2 = 200 GB/s, the bisection between nodes {0,1} and {2,3}.
  CHECK(bisection_bandwidth(t) == doctest::Approx(200e9));
}

TEST_CASE("dgx-a100 rail-optimised scalable units: rail i of 20 nodes on one leaf, leaves under the spine")
{
  // 45 nodes: two whole units of 20 and one of 5; 8 rails each, plus the spine.
  const Topology t = inline_cluster(R"({"base": "dgx-a100", "nodes": 45})");
  CHECK(t.devices_of_kind(DeviceKind::NetworkSwitch).size() == 3 * 8 + 1);
  CHECK(route_crosses(t, "n0.nic3", "n19.nic3", "fabric.su0.rail3"));
  CHECK_FALSE(route_crosses(t, "n0.nic3", "n19.nic3", "fabric.spine"));
  CHECK(route_crosses(t, "n19.nic3", "n20.nic3", "fabric.spine"));  // the next unit
  CHECK(route_crosses(t, "n44.nic7", "n40.nic7", "fabric.su2.rail7"));
  // A leaf's uplink: 20 ports x 25 GB/s, non-blocking.
  const Link& up = t.link(t.links_between(t.device_index("fabric.su1.rail0"), t.device_index("fabric.spine")).at(0));
  CHECK(up.bandwidth == doctest::Approx(20 * 25e9));

  // Up to 20 nodes, one leaf per rail, named as before.
  const Topology small = inline_cluster(R"({"base": "dgx-a100", "nodes": 4})");
  CHECK(small.devices_of_kind(DeviceKind::NetworkSwitch).size() == 8 + 1);
  CHECK(route_crosses(small, "n0.nic0", "n3.nic0", "fabric.rail0"));
}

TEST_CASE("pcie-box without P2P stages GPU-to-GPU traffic through host memory")
{
  const Topology t = load_topology("pcie-box");
  CHECK_FALSE(t.pcie_p2p);
  CHECK(path_type(t, t.gpus()[0], t.gpus()[1]) == "NODE");
  CHECK(path_type(t, t.gpus()[0], t.gpus()[7]) == "SYS");
  CHECK(route_crosses(t, "n0.gpu0", "n0.gpu7", "n0.cpu1"));
  CHECK(t.route_bandwidth(t.route(t.gpus()[0], t.gpus()[1])) == doctest::Approx(16e9 * 16 * 128 / 130 / 8));

  // Two GPUs behind one switch (the 2 x RTX 2080 Ti box): PIX, yet the data goes up to the CPU.
  const Topology pair = build_topology(JsonReader(nlohmann::json(std::string(DTSIM_TESTS_DIR) +
                                                                 "/data/topology/rtx2080ti_pair.json"),
                                                  "test", ""));
  CHECK(path_type(pair, pair.gpus()[0], pair.gpus()[1]) == "PIX");
  CHECK(pair.route(pair.gpus()[0], pair.gpus()[1]).size() == 4);
  CHECK(route_crosses(pair, "n0.gpu0", "n0.gpu1", "n0.cpu0"));
  Topology p2p = pair;
  p2p.pcie_p2p = true;
  CHECK(p2p.route(p2p.gpus()[0], p2p.gpus()[1]).size() == 2);
}

TEST_CASE("link rates as NCCL's topology search sees them")
{
  const Topology v = load_topology("dgx1-v100");
  const Link& nv2 = v.link(v.links_between(v.gpus()[0], v.gpus()[3]).at(0));
  CHECK(nccl_link_bandwidth(v, nv2) == doctest::Approx(40e9));  // 2 x SM70 20 GB/s
  const Link& pcie3 = v.link(v.links_of(v.gpus()[0]).at(0));
  REQUIRE(pcie3.kind == LinkKind::Pcie);
  CHECK(nccl_link_bandwidth(v, pcie3) == doctest::Approx(12e9));
  const Topology h = load_topology("hgx-h100");
  const Link& nvs = h.link(h.links_between(h.gpus()[0], h.device_index("n0.nvswitch")).at(0));
  CHECK(nccl_link_bandwidth(h, nvs) == doctest::Approx(18 * 20.6e9));
  const Link& pcie5 = h.link(h.links_between(h.gpus()[0], h.device_index("n0.pcie0")).at(0));
  CHECK(nccl_link_bandwidth(h, pcie5) == doctest::Approx(48e9));
}
