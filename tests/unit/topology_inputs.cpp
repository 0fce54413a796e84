// Cluster descriptions: presets, files, inline objects with "base"; bad input names file and pointer.
#include "sim/topology/topology_builder.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace dtsim;

namespace {

struct Failure {
  std::string file, pointer, message;
};

Failure error_of_inline(const std::string& text)
{
  const nlohmann::json value = nlohmann::json::parse(text);
  try {
    build_topology(JsonReader(value, "scenario.json", "/cluster"));
  } catch (const InputError& e) {
    return {e.file(), e.pointer(), e.what()};
  }
  FAIL("expected an InputError for " << text);
  return {};
}

Failure error_of_file(const std::string& name)
{
  try {
    load_topology(std::string(DTSIM_TESTS_DIR) + "/data/topology/" + name);
  } catch (const InputError& e) {
    return {e.file(), e.pointer(), e.what()};
  }
  FAIL("expected an InputError for " << name);
  return {};
}

bool contains(const std::string& text, const std::string& part)
{
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("inline overrides are deep-merged over the preset")
{
  const nlohmann::json value = nlohmann::json::parse(
      R"({"base": "hgx-h100", "nodes": 2, "gpu": "H200", "nic": {"gbps": 200}, "fabric": {"kind": "switch"}})");
  const Topology t = build_topology(JsonReader(value, "scenario.json", "/cluster"));
  CHECK(t.name == "hgx-h100");
  CHECK(t.gpu.name == "H200");
  CHECK(t.nics_of_node(1).size() == 8);  // count_per_node kept from the preset
  CHECK(t.device_index("fabric.switch") >= 0);
  CHECK(t.route_bandwidth(t.route(t.gpus()[0], t.gpus()[8])) == doctest::Approx(25e9));
}

TEST_CASE("layers combine as JSON merge patches: null removes a member of the preset")
{
  // An optional member removed: its default (no host cores given), not the preset's value.
  const nlohmann::json value = nlohmann::json::parse(R"({"base": "hgx-h100", "host": null})");
  CHECK(build_topology(JsonReader(value, "scenario.json", "/cluster")).host.cores == 0);
  // Only the member removed: the preset's cpu stays, and without cores it means nothing (an error
  // that names the preset file, where the cpu came from).
  const auto host = error_of_inline(R"({"base": "hgx-h100", "host": {"cores": null}})");
  CHECK(contains(host.file, "hgx-h100.json"));
  CHECK(host.pointer == "/host/cpu");
  // A required member removed is missing, named at the most specific layer.
  const auto e = error_of_inline(R"({"base": "hgx-h100", "nic": {"gbps": null}})");
  CHECK(e.file == "scenario.json");
  CHECK(e.pointer == "/cluster");
  CHECK(contains(e.message, "missing member \"nic/gbps\""));
}

TEST_CASE("--nodes overrides the file; files may start from a base preset")
{
  CHECK(load_topology("dgx-a100", 2).gpus().size() == 16);
  const Topology t = load_topology(std::string(DTSIM_TESTS_DIR) + "/data/topology/dgx1_4nodes_1nic.json");
  CHECK(t.name == "dgx1_4nodes_1nic");
  CHECK(t.gpus().size() == 32);
  CHECK(load_topology(std::string(DTSIM_TESTS_DIR) + "/data/topology/dgx1_4nodes_1nic.json", 2).gpus().size() == 16);
  CHECK_THROWS_AS(load_topology("dgx-a100", 0), InputError);
}

TEST_CASE("errors in inline clusters point into the scenario")
{
  auto e = error_of_inline(R"({"base": "dgx1-v100", "nodes": 0})");
  CHECK(e.file == "scenario.json");
  CHECK(e.pointer == "/cluster/nodes");

  e = error_of_inline(R"({"base": "hgx-h100", "gpus_per_node": 16})");
  CHECK(e.pointer == "/cluster/gpus_per_node");
  CHECK(contains(e.message, "at most 8"));

  e = error_of_inline(R"({"base": "dgx1-v100", "intra_node": {"kind": "ring"}})");
  CHECK(e.pointer == "/cluster/intra_node/kind");

  e = error_of_inline(R"({"base": "dgx1-v100", "nic": {"count": 2}})");
  CHECK(e.pointer == "/cluster/nic/count");

  e = error_of_inline(R"({"base": "dgx1-v100", "gpu": "V200"})");
  CHECK(e.pointer == "/cluster/gpu");

  e = error_of_inline(R"({"base": "dgx1-v100", "nic": {"gbps": -100}})");
  CHECK(e.pointer == "/cluster/nic/gbps");

  e = error_of_inline(R"({"base": "dgx1-v100", "gpus_per_node": 12})");
  CHECK(e.pointer == "/cluster/gpus_per_node");
  CHECK(contains(e.message, "describes 8 GPUs"));

  e = error_of_inline(R"({"base": "nope"})");
  CHECK(e.pointer == "/cluster/base");
  CHECK(contains(e.message, "dgx1-v100"));

  e = error_of_inline(R"({"gpu": "A100"})");
  CHECK(e.pointer == "/cluster");
  CHECK(contains(e.message, "nodes"));

  e = error_of_inline(R"(42)");
  CHECK(e.pointer == "/cluster");
}

TEST_CASE("a preset value keeps pointing at the preset file when the override is fine")
{
  // Fewer GPUs than the mesh describes is allowed: the first GPUs of the machine.
  const nlohmann::json value = nlohmann::json::parse(R"({"base": "dgx1-v100", "gpus_per_node": 4})");
  const Topology t = build_topology(JsonReader(value, "scenario.json", "/cluster"));
  CHECK(t.count_links(LinkKind::NvLink) == 6);  // the fully connected quad 0-3
}

TEST_CASE("broken files name the file and the JSON pointer")
{
  auto e = error_of_file("bad_zero_rate.json");
  CHECK(contains(e.file, "bad_zero_rate.json"));
  CHECK(e.pointer == "/nic/gbps");

  e = error_of_file("bad_unknown_kind.json");
  CHECK(e.pointer == "/intra_node/kind");

  e = error_of_file("bad_too_many_gpus.json");
  CHECK(e.pointer == "/gpus_per_node");

  e = error_of_file("bad_nvlink_pair.json");
  CHECK(e.pointer == "/intra_node/nvlink_pairs/1");

  e = error_of_file("bad_typo.json");
  CHECK(e.pointer == "/fabric/nic_per_leaf");

  e = error_of_file("bad_base.json");
  CHECK(e.pointer == "/base");

  e = error_of_file("bad_syntax.json");
  CHECK(contains(e.message, "malformed JSON"));

  e = error_of_file("does_not_exist.json");
  CHECK(contains(e.message, "cannot open"));

  try {
    load_topology("dgx-9000");
    FAIL("expected InputError");
  } catch (const InputError& err) {
    CHECK(err.file() == "--topology");
    CHECK(contains(err.what(), "hgx-h100"));
  }
}

TEST_CASE("members of another intra_node.kind are refused where the user gives them, not where a preset does")
{
  auto e = error_of_inline(R"({"base": "pcie-box", "intra_node": {"nvlink_lane_gbytes": -5}})");
  CHECK(e.file == "scenario.json");
  CHECK(e.pointer == "/cluster/intra_node/nvlink_lane_gbytes");
  CHECK(contains(e.message, "expected no nvlink_lane_gbytes with intra_node.kind pcie"));

  e = error_of_inline(R"({"base": "dgx1-v100", "intra_node": {"max_gpus": "abc"}})");
  CHECK(e.pointer == "/cluster/intra_node/max_gpus");
  CHECK(contains(e.message, "intra_node.kind nvlink-mesh"));

  e = error_of_inline(R"({"base": "hgx-h100", "intra_node": {"nvlink_pairs": "garbage"}})");
  CHECK(e.pointer == "/cluster/intra_node/nvlink_pairs");

  e = error_of_inline(R"({"base": "pcie-box", "intra_node": {"gpus_per_pcie_switch": 2}})");
  CHECK(e.pointer == "/cluster/intra_node/gpus_per_pcie_switch");

  e = error_of_inline(R"({"base": "pcie-box", "intra_node": {"cpu_sockets": 1, "cpu_interconnect": {"gbytes": -1}}})");
  CHECK(e.pointer == "/cluster/intra_node/cpu_interconnect");

  // The preset's own members of its kind are not the user's: another kind over dgx1-v100 leaves its
  // NVLink mesh unused; one socket over pcie-box leaves its interconnect; a null removes a member.
  for (const char* fine : {R"({"base": "dgx1-v100", "intra_node": {"kind": "pcie"}})",
                           R"({"base": "dgx-a100", "intra_node": {"kind": "pcie", "pcie_switches": 0}})",
                           R"({"base": "pcie-box", "intra_node": {"cpu_sockets": 1}})",
                           R"({"base": "dgx1-v100", "intra_node": {"kind": "pcie", "nvlink_pairs": null}})"}) {
    CAPTURE(fine);
    const nlohmann::json value = nlohmann::json::parse(fine);
    CHECK_NOTHROW(build_topology(JsonReader(value, "scenario.json", "/cluster")));
  }
}

TEST_CASE("a contradiction between the user's member and the preset's is blamed on the user's")
{
  auto e = error_of_inline(R"({"base": "dgx1-v100", "intra_node": {"nvlink_pairs": []}})");
  CHECK(e.file == "scenario.json");
  CHECK(e.pointer == "/cluster/intra_node/nvlink_pairs");
  CHECK(contains(e.message, "8 GPUs (gpus_per_node), got pairs among 0 GPUs"));

  e = error_of_inline(R"({"base": "dgx1-v100", "intra_node": {"pcie_switches": 3}})");
  CHECK(e.pointer == "/cluster/intra_node/pcie_switches");
  CHECK(contains(e.message, "3 PCIe switches of 2 GPUs hold at most 6 GPUs"));

  e = error_of_inline(R"({"base": "hgx-h100", "intra_node": {"max_gpus": 4}})");
  CHECK(e.pointer == "/cluster/intra_node/max_gpus");

  // Both the user's: gpus_per_node is blamed, as before.
  e = error_of_inline(R"({"base": "dgx1-v100", "gpus_per_node": 8, "intra_node": {"pcie_switches": 3}})");
  CHECK(e.pointer == "/cluster/gpus_per_node");
}

TEST_CASE("a missing base file is the naming file's error, at \"base\"")
{
  const auto e = error_of_inline(R"({"base": "absent_base_file.json"})");
  CHECK(e.file == "scenario.json");
  CHECK(e.pointer == "/cluster/base");
  CHECK(contains(e.message, "expected an existing file, \"absent_base_file.json\" was not found"));
}
