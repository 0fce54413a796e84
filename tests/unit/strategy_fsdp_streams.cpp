// FSDP2 beside its own streams: the caching allocator's pools of the all-gather copy-in and
// reduce-scatter streams (fsdp_stream_pools.hpp) in closed form, and the compute slowed by the
// shard group's collectives (fsdp_interference.hpp) on a hand-made timeline; both as an FSDP2 plan
// shows them.
#include "sim/predict/predict.hpp"
#include "sim/strategies/fsdp_interference.hpp"
#include "sim/strategies/fsdp_stream_pools.hpp"
#include "sim/strategies/memory_timeline.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

using namespace dtsim;

namespace {

ShardUnits units(double root, double unit, int count)
{
  ShardUnits u;
  u.units.push_back({"root", root, 0});
  for (int i = 0; i < count; ++i)
    u.units.push_back({"unit", unit, 0});
  return u;
}

constexpr double kMiB = 1024.0 * 1024.0;

nlohmann::json llama_fsdp(int gpus, int nodes, int version)
{
  return {{"cluster", {{"base", "hgx-h100"}, {"nodes", nodes}}},
          {"model", {{"family", "llama"}, {"name", "llama-small"}, {"hidden", 2048}, {"layers", 4}, {"heads", 16}, {"kv_heads", 8},
                     {"ffn", 8192}, {"seq_len", 2048}, {"vocab", 32000}}},
          {"training",
           {{"dataset_samples", 100000}, {"micro_batch", 2}, {"epochs", 1}, {"precision", "bf16"},
            {"optimizer", "adamw"}, {"compute", {{"efficiency", 0.4}}}}},
          {"strategy",
           {{"kind", "fsdp"}, {"version", version},
            {"mixed_precision", {{"param_dtype", "bf16"}, {"reduce_dtype", "fp32"}}}}},
          {"gpus", gpus},
          {"simulation", {{"iterations", 2}, {"warmup", 1}}}};
}

}  // namespace

TEST_CASE("FSDP2's side-stream pools: root + one unit of AllGather output, every sharded gradient")
{
  // 1e9-parameter root, four 2e8 units, 8 ranks: blocks over 10 MiB round up to 2 MiB.
  const ShardUnits u = units(1e9, 2e8, 4);
  const Fsdp2StreamPools p = fsdp2_stream_pools(u, 1, 8, {2.0}, 4, 4);
  CHECK(p.all_gather == doctest::Approx(allocator_block_bytes(2e9) + allocator_block_bytes(4e8)));
  CHECK(p.reduce_scatter == doctest::Approx(allocator_block_bytes(1e9 / 8 * 4) + 4 * allocator_block_bytes(2e8 / 8 * 4)));
  CHECK(p.total() == doctest::Approx(p.all_gather + p.reduce_scatter));

  SUBCASE("a unit larger than the root: two units' outputs")
  {
    const Fsdp2StreamPools q = fsdp2_stream_pools(units(1e6, 2e8, 4), 1, 8, {2.0}, 4, 4);
    CHECK(q.all_gather == doctest::Approx(2 * allocator_block_bytes(4e8)));
  }
  SUBCASE("reduced in bf16, kept in fp32: the bf16 output of one unit until its cast")
  {
    const Fsdp2StreamPools q = fsdp2_stream_pools(u, 1, 8, {2.0}, 2, 4);
    CHECK(q.reduce_scatter - p.reduce_scatter == doctest::Approx(allocator_block_bytes(1e9 / 8 * 2)));
  }
  SUBCASE("tensor parallelism divides every buffer; one rank holds nothing of its own streams")
  {
    const Fsdp2StreamPools t = fsdp2_stream_pools(u, 2, 8, {2.0}, 4, 4);
    CHECK(t.all_gather == doctest::Approx(allocator_block_bytes(1e9) + allocator_block_bytes(2e8)));
    CHECK(fsdp2_stream_pools(u, 1, 1, {2.0}, 4, 4).total() == 0);
  }
}

TEST_CASE("FSDP interference: a collective queued after a segment slows the next by its time x the SM share")
{
  GpuSpec g;
  g.sms = 100;
  g.memory_bandwidth = 1e12;
  FsdpComputeSegments seg;
  seg.forward_s = {1, 1, 1, 1};
  seg.backward_s = {2, 2, 2, 2};
  const InflightCollective none{0, 0, 1};
  seg.gather = {none, none, {0.5, 0, 50}, none};  // the AllGather for segment 2: 50 of 100 SMs, no HBM
  seg.gather_backward = {none, none, none, none};
  seg.reduce = {none, {0.4, 0, 25}, none, none};  // segment 1's ReduceScatter, after its backward
  const FsdpSlowdown s = fsdp_compute_slowdown(seg, g, 0.0, 1.0);
  // queued at the end of segment 0, it runs through 0.5 s of segment 1 at half speed
  CHECK(s.forward[1] == doctest::Approx(0.25));
  CHECK(s.forward[0] == 0);
  // backward runs 3, 2, 1, 0: queued at the end of segment 1's, it overlaps segment 0's at 3/4 speed
  CHECK(s.backward[0] == doctest::Approx(0.4 * 0.25));
  CHECK(s.total() == doctest::Approx(0.25 + 0.1));
  // no_sync over 4 micro-steps reduces in one: a quarter of the ReduceScatter's effect
  CHECK(fsdp_compute_slowdown(seg, g, 0.0, 0.25).backward[0] == doctest::Approx(0.1 * 0.25));
}

TEST_CASE("an FSDP2 plan: reserved holds the side-stream pools, compute is slower beside the collectives")
{
  const Prediction two = plan_scenario(parse_scenario(llama_fsdp(16, 2, 2), "s.json"));
  const GpuMemory& m = two.plan.memory.front();
  // at least the root's AllGather output (embedding and output layer in bf16) beyond the allocated peak
  CHECK(m.peak_reserved - m.total() > 2 * 32000.0 * 2048 * 2 - kMiB);
  CHECK(two.plan.nccl_slowdown_per_iteration_s > 0);
  CHECK(two.plan.nccl_slowdown_per_iteration_s < 0.1 * two.plan.compute_per_iteration_s);
  // FSDP1 keeps its own accounting
  const Prediction v1 = plan_scenario(parse_scenario(llama_fsdp(16, 2, 1), "s.json"));
  const GpuMemory& m1 = v1.plan.memory.front();
  CHECK(m1.peak_reserved - m1.total() < m.peak_reserved - m.total());
}

TEST_CASE("an FSDP2 shard group of one rank: no side-stream pools, and reserved never below allocated")
{
  // hybrid_shard with shard_group_size 1: the gradients stay where the walk counted them (taking
  // them out for a reduce-scatter pool that one rank does not have left reserved below allocated).
  for (const int version : {1, 2}) {
    CAPTURE(version);
    nlohmann::json doc = llama_fsdp(8, 1, version);
    doc["strategy"]["sharding"] = "hybrid_shard";
    doc["strategy"]["shard_group_size"] = 1;
    const Prediction p = plan_scenario(parse_scenario(doc, "s.json"));
    for (const GpuMemory& m : p.plan.memory)
      CHECK(m.peak_reserved >= m.total());
  }
}
