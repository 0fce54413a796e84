// The Chrome trace: valid JSON; one process per node (and one for the fabric); threads per GPU
// (compute, sends) and per link direction; every transfer on every link of its route with its
// bytes; no two spans overlapping on one thread (lane); a flow arrow from each transfer to the task
// that received it; a utilisation counter per busy link direction; only the chosen iterations.
#include "sim/engine/engine.hpp"
#include "sim/report/chrome_trace.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <map>
#include <set>

using namespace dtsim;

namespace {

struct Machine {
  Topology topology;
  std::vector<int> gpu;
};

/// gpu0..gpu2 on node 0, gpu3 on node 1, each on its own 10 GB/s link to one switch.
Machine star()
{
  Machine m;
  const int sw = m.topology.add_device("switch", DeviceKind::NetworkSwitch);
  for (int g = 0; g < 4; ++g) {
    m.gpu.push_back(m.topology.add_device("gpu" + std::to_string(g), DeviceKind::Gpu, g < 3 ? 0 : 1, g % 3));
    m.topology.add_link("l" + std::to_string(g), LinkKind::Network, m.gpu.back(), sw, 10e9, 1e-6);
    m.topology.add_gpu_rank(m.gpu.back());
  }
  return m;
}

struct Parsed {
  nlohmann::json trace;
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> threads;
  std::vector<nlohmann::json> slices, flows, counters;
};

Parsed parse(const std::string& text)
{
  Parsed p{nlohmann::json::parse(text), {}, {}, {}, {}, {}};
  for (const auto& e : p.trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name")
      p.processes[e["pid"]] = e["args"]["name"];
    else if (e["ph"] == "M" && e["name"] == "thread_name")
      p.threads[{e["pid"], e["tid"]}] = e["args"]["name"];
    else if (e["ph"] == "X")
      p.slices.push_back(e);
    else if (e["ph"] == "s" || e["ph"] == "f")
      p.flows.push_back(e);
    else if (e["ph"] == "C")
      p.counters.push_back(e);
  }
  return p;
}

std::string thread_of(const Parsed& p, const nlohmann::json& e)
{
  return p.threads.at({e["pid"].get<int>(), e["tid"].get<int>()});
}

}  // namespace

TEST_CASE("chrome trace of a small graph")
{
  Machine m = star();
  const auto& gpu = m.gpu;
  TaskGraph g;
  const int c = g.add_compute(gpu[0], 0.01, "fwd", TaskCategory::Forward);
  const int a = g.add_transfer(gpu[0], gpu[2], 1e8, "a", TaskCategory::AllReduce, {c});
  const int b = g.add_transfer(gpu[1], gpu[2], 1e8, "b", TaskCategory::AllReduce);  // shares l2 down with "a" for a while
  g.add_compute(gpu[2], 0.001, "use", TaskCategory::Backward, {a, b});
  g.add_transfer(gpu[2], gpu[3], 1e6, "to node 1", TaskCategory::SendRecv, {a, b});
  const auto spans = simulate(m.topology, g);
  const Parsed p = parse(chrome_trace(m.topology, g, spans));

  CHECK(p.processes.at(1) == "node 0");
  CHECK(p.processes.at(2) == "node 1");
  CHECK(p.processes.size() == 2);  // a link direction out of the switch goes with the node it enters
  int transfers_on_links = 0;
  for (const auto& e : p.slices) {
    const std::string thread = thread_of(p, e);
    if (thread.rfind("network", 0) == 0 && e["name"] != "to node 1") {
      ++transfers_on_links;
      CHECK(e["args"]["bytes"] == 1e8);
    }
    if (e["name"] == "use")
      CHECK(thread == "gpu2 compute");
    if (e["name"] == "a")
      CHECK((thread == "gpu0 sends" || thread.rfind("network", 0) == 0));
  }
  CHECK(transfers_on_links == 4);  // two transfers x two links each
  std::set<std::string> names;
  for (const auto& [track, name] : p.threads)
    names.insert(name);
  CHECK(names.count("gpu0 compute") == 1);
  CHECK(names.count("gpu1 sends") == 1);
  CHECK(names.count("network switch -> gpu2 (2)") == 1);  // the two flows into gpu2 overlap: two lanes

  // No overlap within a lane.
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> lanes;
  for (const auto& e : p.slices)
    lanes[{e["pid"], e["tid"]}].emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
  for (auto& [track, spans_on_lane] : lanes) {
    std::sort(spans_on_lane.begin(), spans_on_lane.end());
    for (std::size_t i = 1; i < spans_on_lane.size(); ++i)
      CHECK(spans_on_lane[i].first >= spans_on_lane[i - 1].second - 1e-3);
  }

  // Flow arrows: a and b end at "use" (the first task on gpu2 after them); "to node 1" has no receiver task.
  std::map<int, std::vector<nlohmann::json>> by_id;
  for (const auto& e : p.flows)
    by_id[e["id"]].push_back(e);
  CHECK(by_id.size() == 2);
  for (const int id : {a, b}) {
    REQUIRE(by_id[id].size() == 2);
    CHECK(by_id[id][0]["ph"] == "s");
    CHECK(thread_of(p, by_id[id][0]) == (id == a ? "gpu0 sends" : "gpu1 sends"));
    CHECK(by_id[id][1]["ph"] == "f");
    CHECK(by_id[id][1]["bp"] == "e");
    CHECK(thread_of(p, by_id[id][1]) == "gpu2 compute");
    CHECK(by_id[id][1]["ts"].get<double>() >= by_id[id][0]["ts"].get<double>());
  }

  // Counters: the link into gpu2 is full while both transfers share it, and idle at the end.
  std::map<std::string, std::vector<double>> counter;
  for (const auto& e : p.counters)
    counter[e["name"]].push_back(e["args"]["percent"]);
  const auto& into_gpu2 = counter.at("network switch -> gpu2 utilisation");
  CHECK(*std::max_element(into_gpu2.begin(), into_gpu2.end()) == doctest::Approx(100).epsilon(0.02));
  CHECK(into_gpu2.back() == 0);
  for (const auto& [name, values] : counter)
    for (double v : values)
      CHECK((v >= 0 && v <= 100));
  CHECK(p.trace["otherData"]["iterations_simulated"] == 1);
}

TEST_CASE("chrome trace keeps the chosen iterations")
{
  Machine m = star();
  TaskGraph g;
  Plan plan;
  plan.setup_end = g.add_transfer(m.gpu[0], m.gpu[1], 1e6, "setup bcast", TaskCategory::Broadcast);
  int last = plan.setup_end;
  for (int it = 0; it < 3; ++it) {
    g.set_iteration(it);
    last = g.add_compute(m.gpu[0], 0.001, "fwd " + std::to_string(it), TaskCategory::Forward, {last});
    plan.iteration_end.push_back(g.add_delay(m.gpu[0], 0, "iteration done", TaskCategory::Marker, {last}));
  }
  const auto spans = simulate(m.topology, g);
  const auto names_in = [&](const std::string& spec) {
    std::set<std::string> names;
    for (const auto& e : parse(chrome_trace(m.topology, g, spans, trace_options(spec, plan))).slices)
      names.insert(e["name"]);
    return names;
  };
  CHECK(names_in("all") == std::set<std::string>{"setup bcast", "fwd 0", "fwd 1", "fwd 2"});
  CHECK(names_in("1") == std::set<std::string>{"fwd 2"});
  CHECK(names_in("2") == std::set<std::string>{"fwd 1", "fwd 2"});
  CHECK(names_in("0-1") == std::set<std::string>{"setup bcast", "fwd 0", "fwd 1"});
  CHECK(names_in("1-1") == std::set<std::string>{"fwd 1"});
  for (const char* bad : {"0", "4", "2-1", "0-3", "x", "-1", "1-", ""})
    CHECK_THROWS_AS(trace_options(bad, plan), InputError);
  const auto other = parse(chrome_trace(m.topology, g, spans, trace_options("2", plan))).trace["otherData"];
  CHECK(other["iterations_simulated"] == 3);
  CHECK(other["iterations_traced"] == "1-2");
}

TEST_CASE("the golden trace of 2 nodes x 2 GPUs is well-formed")
{
  // tests/golden/trace_toy_ddp_2nodes.json: `dtsim run tests/data/scenarios/trace_toy_ddp_2nodes.json
  // --trace-iterations 1 --trace FILE` (cli.run_trace_golden keeps it current).
  std::ifstream in(std::string(DTSIM_TESTS_DIR) + "/golden/trace_toy_ddp_2nodes.json");
  REQUIRE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Parsed p = parse(text);
  CHECK(p.processes == std::map<int, std::string>{{1, "node 0"}, {2, "node 1"}});
  CHECK(p.trace["otherData"]["iterations_traced"] == "1-1");
  std::set<std::string> gpu_threads;
  for (const auto& [track, name] : p.threads)
    if (name.find("compute") != std::string::npos)
      gpu_threads.insert(name);
  CHECK(gpu_threads == std::set<std::string>{"n0.gpu0 compute", "n0.gpu1 compute", "n1.gpu0 compute", "n1.gpu1 compute"});
  for (const auto& e : p.slices) {
    const bool on_link = thread_of(p, e).find(" -> ") != std::string::npos;
    CHECK(e["args"].contains("iteration") != on_link);  // a link's slices carry the bytes only
    if (!on_link)
      CHECK(e["args"]["iteration"] == 1);
  }
  // Every flow has one start and one end, the end no earlier, and some cross from node 0 to node 1.
  std::map<int, std::vector<nlohmann::json>> by_id;
  for (const auto& e : p.flows)
    by_id[e["id"]].push_back(e);
  CHECK(!by_id.empty());
  int across = 0;
  for (const auto& [id, pair] : by_id) {
    REQUIRE(pair.size() == 2);
    CHECK(pair[0]["ph"] == "s");
    CHECK(pair[1]["ph"] == "f");
    CHECK(pair[1]["ts"].get<double>() >= pair[0]["ts"].get<double>());
    across += pair[0]["pid"] != pair[1]["pid"];
  }
  CHECK(across > 0);
  std::set<std::string> counters;
  for (const auto& e : p.counters)
    counters.insert(e["name"]);
  CHECK(counters.count("network n0.nic0 -> fabric.switch utilisation") == 1);
}
