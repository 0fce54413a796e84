// The Chrome trace: valid JSON, one track per GPU and per link direction, every transfer on every
// link of its route with its bytes, and no two spans overlapping on one track (lane).
#include "sim/engine/engine.hpp"
#include "sim/report/chrome_trace.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <map>

using namespace dtsim;

TEST_CASE("chrome trace of a small graph")
{
  Topology t;
  const int sw = t.add_device("switch", DeviceKind::NetworkSwitch);
  std::vector<int> gpu;
  for (int g = 0; g < 3; ++g) {
    gpu.push_back(t.add_device("gpu" + std::to_string(g), DeviceKind::Gpu, 0, g));
    t.add_link("l" + std::to_string(g), LinkKind::Network, gpu.back(), sw, 10e9, 1e-6);
    t.add_gpu_rank(gpu.back());
  }
  TaskGraph g;
  const int c = g.add_compute(gpu[0], 0.01, "fwd", "forward");
  g.add_transfer(gpu[0], gpu[2], 1e8, "a", "allreduce", {c});
  g.add_transfer(gpu[1], gpu[2], 1e8, "b", "allreduce");  // shares l2 down with "a" for a while
  const auto spans = simulate(t, g);
  const auto trace = nlohmann::json::parse(chrome_trace(t, g, spans));

  std::map<std::pair<int, int>, std::string> names;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> lanes;
  int transfers_on_links = 0;
  for (const auto& e : trace["traceEvents"]) {
    const std::pair<int, int> track{e["pid"].get<int>(), e.value("tid", 0)};
    if (e["ph"] == "M" && e["name"] == "thread_name")
      names[track] = e["args"]["name"];
    if (e["ph"] != "X")
      continue;
    lanes[track].emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
    if (names[track].rfind("network", 0) == 0) {
      ++transfers_on_links;
      CHECK(e["args"]["bytes"] == 1e8);
    }
  }
  CHECK(transfers_on_links == 4);  // two transfers x two links each
  bool has_compute = false;
  bool has_second_lane = false;
  for (const auto& [track, name] : names) {
    has_compute |= name == "gpu0 compute";
    has_second_lane |= name == "network switch -> gpu2 (2)";
  }
  CHECK(has_compute);
  CHECK(has_second_lane);  // the two flows into gpu2 overlap, so they get two lanes
  for (auto& [track, spans_on_lane] : lanes) {
    std::sort(spans_on_lane.begin(), spans_on_lane.end());
    for (std::size_t i = 1; i < spans_on_lane.size(); ++i)
      CHECK(spans_on_lane[i].first >= spans_on_lane[i - 1].second - 1e-6);
  }
}
