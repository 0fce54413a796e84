// The SimGrid adapter: lone flows take latency + size / bandwidth, flows sharing a link split it,
// dependencies order tasks, and a ring AllReduce on a contention-free ring matches the closed form
// 2(n-1)/n * S/B + 2(n-1) * latency.
#include "sim/collectives/collective_options.hpp"
#include "sim/engine/engine.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace dtsim;

namespace {

// n GPUs, each on its own link (bandwidth B, latency L) to one switch.
Topology star(int n, double bandwidth, double latency)
{
  Topology t;
  t.name = "test-star";
  const int sw = t.add_device("switch", DeviceKind::NetworkSwitch);
  for (int g = 0; g < n; ++g) {
    const int d = t.add_device("gpu" + std::to_string(g), DeviceKind::Gpu, 0, g);
    t.add_link("l" + std::to_string(g), LinkKind::Network, d, sw, bandwidth, latency);
    t.add_gpu_rank(d);
  }
  t.gpus_per_node = n;
  return t;
}

}  // namespace

TEST_CASE("a lone transfer takes latency + size / bandwidth")
{
  const Topology t = star(2, 10e9, 1e-6);
  TaskGraph g;
  g.add_transfer(t.gpus()[0], t.gpus()[1], 1e9, "x", TaskCategory::None);
  const auto spans = simulate(t, g);
  CHECK(spans[0].duration() == doctest::Approx(2e-6 + 0.1).epsilon(1e-9));
}

TEST_CASE("two transfers into one GPU share its link")
{
  const Topology t = star(3, 10e9, 0);
  TaskGraph g;
  g.add_transfer(t.gpus()[0], t.gpus()[2], 1e9, "a", TaskCategory::None);
  g.add_transfer(t.gpus()[1], t.gpus()[2], 1e9, "b", TaskCategory::None);
  const auto spans = simulate(t, g);
  CHECK(spans[0].end == doctest::Approx(0.2));
  CHECK(spans[1].end == doctest::Approx(0.2));
}

TEST_CASE("opposite directions of a link do not contend (full duplex)")
{
  const Topology t = star(2, 10e9, 0);
  TaskGraph g;
  g.add_transfer(t.gpus()[0], t.gpus()[1], 1e9, "a", TaskCategory::None);
  g.add_transfer(t.gpus()[1], t.gpus()[0], 1e9, "b", TaskCategory::None);
  const auto spans = simulate(t, g);
  CHECK(spans[0].end == doctest::Approx(0.1));
  CHECK(spans[1].end == doctest::Approx(0.1));
}

TEST_CASE("dependencies order compute, delays and transfers")
{
  const Topology t = star(2, 10e9, 0);
  TaskGraph g;
  const int c = g.add_compute(t.gpus()[0], 0.5, "fwd", TaskCategory::Forward);
  const int d = g.add_delay(t.gpus()[0], 0.25, "launch", TaskCategory::Launch, {c});
  const int x = g.add_transfer(t.gpus()[0], t.gpus()[1], 1e9, "send", TaskCategory::None, {d});
  const int c2 = g.add_compute(t.gpus()[0], 0.5, "other", TaskCategory::Forward);  // shares GPU0 with fwd
  const auto spans = simulate(t, g);
  CHECK(spans[static_cast<std::size_t>(c)].end == doctest::Approx(1.0));  // two kernels share the GPU
  CHECK(spans[static_cast<std::size_t>(c2)].end == doctest::Approx(1.0));
  CHECK(spans[static_cast<std::size_t>(d)].end == doctest::Approx(1.25));
  CHECK(spans[static_cast<std::size_t>(x)].start == doctest::Approx(1.25));
  CHECK(spans[static_cast<std::size_t>(x)].end == doctest::Approx(1.35));
}

TEST_CASE("a compute that starts beside a running one shares the device from then on")
{
  // GPU0: a runs alone for 0.5 s (a timer), then b joins: each at half speed until a's last 0.5 s
  // of work is done at 1.5 s; b, with 0.5 s of work left, runs alone until c joins it (an Exec by
  // then) at 1.75 s: b's last 0.25 s then takes 0.5 s, and c ends at 2.25 + 0.75 = 3.0 s.
  // GPU1's compute is alone throughout: start + seconds. A compute due to start as another ends
  // (not after it) runs alone.
  const Topology t = star(2, 10e9, 0);
  TaskGraph g;
  const int a = g.add_compute(t.gpus()[0], 1.0, "a", TaskCategory::Forward);
  const int b = g.add_compute(t.gpus()[0], 1.0, "b", TaskCategory::Forward, {g.add_delay(t.gpus()[0], 0.5, "wait b", TaskCategory::None)});
  const int c = g.add_compute(t.gpus()[0], 1.0, "c", TaskCategory::Forward, {g.add_delay(t.gpus()[0], 1.75, "wait c", TaskCategory::None)});
  const int alone = g.add_compute(t.gpus()[1], 0.3, "alone", TaskCategory::Forward);
  const int next = g.add_compute(t.gpus()[1], 0.2, "next", TaskCategory::Forward, {g.add_delay(t.gpus()[1], 0.3, "wait", TaskCategory::None)});
  const auto spans = simulate(t, g);
  auto end = [&](int id) { return spans[static_cast<std::size_t>(id)].end; };
  CHECK(end(a) == doctest::Approx(1.5));
  CHECK(end(b) == doctest::Approx(2.25));
  CHECK(end(c) == doctest::Approx(3.0));
  CHECK(end(alone) == doctest::Approx(0.3));
  CHECK(end(next) == doctest::Approx(0.5));
}

TEST_CASE("ring AllReduce on a contention-free ring matches the closed form")
{
  for (int n : {2, 4, 8, 16}) {
    const double B = 12.5e9;
    const double hop_latency = 2 * 1.5e-6;  // two links per GPU-to-GPU route
    const double S = 100e6;
    const Topology t = star(n, B, 1.5e-6);
    TaskGraph g;
    CollectiveCall call;
    call.ranks = t.gpus();
    call.bytes = S;
    call.label = "ar";
    CollectiveOptions textbook;  // plain ring at line rate, no NCCL latencies (collective_options.hpp)
    textbook.ideal = true;
    const auto tasks = add_collective(g, t, call, std::vector<std::vector<int>>(static_cast<std::size_t>(n)), textbook);
    const auto spans = simulate(t, g);
    double end = 0;
    for (int id : tasks.done)
      end = std::max(end, spans[static_cast<std::size_t>(id)].end);
    const double closed = 2.0 * (n - 1) / n * S / B + 2.0 * (n - 1) * hop_latency;
    CAPTURE(n);
    CHECK(end == doctest::Approx(closed).epsilon(1e-6));
  }
}

TEST_CASE("a rate cap limits a lone transfer")
{
  const Topology t = star(2, 10e9, 0);
  TaskGraph g;
  const int x = g.add_transfer(t.gpus()[0], t.gpus()[1], 1e9, "capped", TaskCategory::None);
  g[x].rate_cap = 5e9;
  const auto spans = simulate(t, g);
  CHECK(spans[0].duration() == doctest::Approx(0.2));
}

TEST_CASE("a capped transfer still waits for its dependencies")
{
  const Topology t = star(2, 10e9, 0);
  TaskGraph g;
  const int c = g.add_compute(t.gpus()[0], 0.5, "fwd", TaskCategory::Forward);
  const int x = g.add_transfer(t.gpus()[0], t.gpus()[1], 1e9, "capped", TaskCategory::None, {c, c});  // a repeated dependency is harmless
  g[x].rate_cap = 5e9;
  const auto spans = simulate(t, g);
  CHECK(spans[static_cast<std::size_t>(x)].start == doctest::Approx(0.5));
  CHECK(spans[static_cast<std::size_t>(x)].end == doctest::Approx(0.7));
}

TEST_CASE("an empty transfer takes the route latency")
{
  const Topology t = star(2, 10e9, 1e-6);
  TaskGraph g;
  const int c = g.add_compute(t.gpus()[0], 0.5, "fwd", TaskCategory::Forward);
  g.add_transfer(t.gpus()[0], t.gpus()[1], 0.3, "empty", TaskCategory::None, {c});
  g.add_transfer(t.gpus()[0], t.gpus()[1], 0.0, "empty at start", TaskCategory::None);
  const auto spans = simulate(t, g);
  CHECK(spans[1].end == doctest::Approx(0.5 + 2e-6));
  CHECK(spans[2].end == doctest::Approx(2e-6));
}

TEST_CASE("simulations run side by side as ChildJobs, each as simulate() does")
{
  const Topology a = star(3, 10e9, 0), b = star(2, 5e9, 1e-6);
  std::vector<TaskGraph> graphs(5);
  for (int k = 0; k < 4; ++k) {  // graph 4 stays empty
    const Topology& t = k % 2 ? b : a;
    const int first = graphs[static_cast<std::size_t>(k)].add_transfer(t.gpus()[0], t.gpus()[1], 1e9 * (k + 1), "x", TaskCategory::None);
    graphs[static_cast<std::size_t>(k)].add_delay(t.gpus()[1], 0.5, "then", TaskCategory::None, {first});
  }
  std::vector<ChildJob> jobs;  // all at once; each child may run SimGrid once
  for (std::size_t k = 0; k < graphs.size(); ++k)
    jobs.emplace_back([&, k] { return encode_spans(simulate_here(k % 2 ? b : a, graphs[k])); });
  std::vector<std::vector<Span>> each(graphs.size());
  for (std::size_t k = graphs.size(); k-- > 0;) {  // taken in another order than started
    const std::string got = jobs[k].result();
    each[k] = decode_spans(got, static_cast<int>(got.size() / sizeof(Span)));
  }
  CHECK(each[4].empty());
  for (std::size_t k = 0; k < 4; ++k) {
    const auto alone = simulate(k % 2 ? b : a, graphs[k]);
    REQUIRE(each[k].size() == alone.size());
    for (std::size_t i = 0; i < alone.size(); ++i)
      CHECK(each[k][i].end == alone[i].end);
  }
  CHECK_THROWS_AS(jobs[0].result(), std::logic_error);  // once only
  CHECK_THROWS_AS(decode_spans(std::string(3, 'x'), 1), std::runtime_error);
}

TEST_CASE("a ChildJob reports a job that throws; one destroyed before it is done is killed")
{
  ChildJob broken([]() -> std::string { throw std::runtime_error("broken job"); });
  CHECK_THROWS_WITH_AS(broken.result(), doctest::Contains("broken job"), std::runtime_error);
  ChildJob fine([] { return std::string("fine"); });
  while (!fine.done())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(fine.result() == "fine");
  {
    ChildJob forever([]() -> std::string {
      for (;;)
        ::pause();
    });
    CHECK_FALSE(forever.done());
  }  // killed and reaped here: the test would hang otherwise
}
