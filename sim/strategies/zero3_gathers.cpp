// See zero3_gathers.hpp.
#include "sim/strategies/zero3_gathers.hpp"

#include "sim/strategies/optimizer_step.hpp"

#include <fmt/format.h>

#include <cmath>

namespace dtsim {

Zero3Gathers::Zero3Gathers(ZeroTally& tally, const Zero3GatherInputs& in)
    : tally_(tally),
      in_(in),
      gathered_(in.fetches.uses.size()),
      dequantized_at_(in.fetches.uses.size(), 0.0),
      persistent_(in.opt.stage == 3 ? persistent_tensors(in.model, in.opt.persistence_threshold) : std::vector<double>{})
{
}

bool Zero3Gathers::from_secondary(std::size_t u, int m) const
{
  return in_.secondary_size < in_.shard_size && (u >= in_.fetches.forward_uses || m > 0);
}

// Stage 3's gathers at use `use` (forward or backward of its layer) in micro-step `m`, after the
// compute before it: the use's own module when not gathered, then the modules prefetched there,
// all in one coalesced AllGather (partition_parameters.py all_gather_coalesced: one flat
// all_gather_into_tensor of the list, per dtype), but hpZ's: a gather for a forward in the first
// micro-step reads the primary partition, every other the secondary (one call each); then the
// wait for the use's own.
// With zero_quantized_weights (ZeRO++ qwZ) each gather carries int8 values and, in a second
// AllGather, one fp32 scale per group of at most CUDAQuantizer.target_group_size (8000) of each
// rank's elements; the first wait on a gather dequantizes all of it (AllGatherCoalescedHandle.wait:
// read int8, write the parameters' dtype, memory-bound) before the module runs.
void Zero3Gathers::gather(const std::size_t* first, const std::size_t* last, const char* what, int m)
{
  const ZeroOptions& opt = in_.opt;
  const Stage3Fetches& fetches = in_.fetches;
  ShardedRun& run = tally_.run();
  double e = 0;
  for (const std::size_t* u = first; u != last; ++u)
    e += in_.elements[fetches.uses[*u]];
  const bool forward = *first < fetches.forward_uses;
  const auto& name = in_.model.layers[fetches.uses[*first]].name;
  // hpZ's secondary groups are a process group of their own (zero_param_process_group), so their
  // gathers run on its NCCL stream, beside the primary group's ReduceScatters.
  const bool hpz = from_secondary(*first, m);
  const auto stream = hpz ? ShardedRun::Stream::Replicate : ShardedRun::Stream::Shard;
  const auto& groups = hpz ? in_.secondary : in_.shard;
  const std::string label = last - first == 1 ? fmt::format("{} {} ({})", what, name, forward ? "forward" : "backward")
                                              : fmt::format("{} {} modules from {} ({})", what, last - first, name, forward ? "forward" : "backward");
  const char* kind = hpz ? "parameters (hpZ secondary)" : "parameters";
  const auto category = forward ? TaskCategory::AllGather : TaskCategory::AllGatherBackward;
  run.stream_waits_for_compute(stream);
  std::vector<int> done;
  if (opt.offload_param && !hpz) {  // each rank's partitions from the host first (ds_tensor.to(device) on this stream)
    done = tally_.offload_copy(stream, e / in_.shard_size * in_.model_bytes, false, opt.offload_param_pinned, "parameters",
                               label + " from host");
    // Without overlap_comm this stream is the compute stream (parameter_offload.py:
    // __allgather_stream = Stream() if overlap_comm else default_stream()): compute waits for the
    // copy. Not for the AllGather: it is asynchronous either way (partition_parameters.py
    // _dist_allgather_fn: async_op=True, on NCCL's own stream), waited for at the use.
    if (!opt.overlap_comm)
      run.wait_for(done);
  }
  if (in_.distributed)  // one GPU with offload_param only copies
    done = tally_.collective(CollectiveOp::AllGather, groups, e * (opt.quantized_weights ? 1.0 : in_.model_bytes), label, kind, category,
                             {}, stream);
  if (opt.quantized_weights && in_.distributed) {
    const double ranks = static_cast<double>(groups.front().size());
    done = tally_.collective(CollectiveOp::AllGather, groups, ranks * std::ceil(e / ranks / kQuantGroupElements) * 4, label + " scales",
                             std::string(kind) + " scales", category, {}, stream);
    for (const std::size_t* u = first; u != last; ++u)  // hpZ splits a prefetch in the first micro-step only
      dequantized_at_[*u] = u == first ? e : 0.0;
  }
  for (const std::size_t* u = first; u != last; ++u)
    gathered_[*u] = done;
}

void Zero3Gathers::fetch(std::size_t use, int m)
{
  const Stage3Fetches& fetches = in_.fetches;
  ShardedRun& run = tally_.run();
  const auto& issued = fetches.issued[use];
  const std::size_t* next = issued.data();
  const std::size_t* end = next + issued.size();
  if (next != end && *next == use) {
    gather(next, next + 1, "fetch", m);
    ++next;
  }
  while (next != end) {  // runs alike in where they gather from
    const std::size_t* run_end = next;
    while (run_end != end && from_secondary(*run_end, m) == from_secondary(*next, m))
      ++run_end;
    gather(next, run_end, "prefetch", m);
    next = run_end;
  }
  if (fetches.gathered_for[use])
    run.wait_for(gathered_[use]);
  if (dequantized_at_[use] > 0 && in_.gpu.memory_bandwidth > 0) {
    const double t = memory_bound_seconds(dequantized_at_[use] * (1 + in_.model_bytes), in_.gpu);
    run.compute_all(t, "dequantize " + in_.model.layers[fetches.uses[use]].name,
                    use < fetches.forward_uses ? TaskCategory::Forward : TaskCategory::Backward);
    dequantize_s_ += tally_.first_iteration() ? t : 0.0;
  }
}

// The persistent parameters, released with every module before the step (stage3.py step():
// _partition_all_parameters) and gathered again after it (_post_step:
// persistent_parameters[0].all_gather(persistent_parameters)): partition_parameters.py
// _allgather_params_coalesced, a blocking call, issues one all_gather_into_tensor per tensor on
// the tensor's partition group and makes the compute stream wait for the last.
void Zero3Gathers::gather_persistent()
{
  if (persistent_.empty() || !in_.distributed)
    return;
  ShardedRun& run = tally_.run();
  run.stream_waits_for_compute(ShardedRun::Stream::Shard);
  std::vector<int> done;
  for (std::size_t t = 0; t < persistent_.size(); ++t)
    done = tally_.collective(CollectiveOp::AllGather, in_.shard, persistent_[t] * in_.model_bytes,
                             fmt::format("all-gather persistent parameter {}", t), "persistent parameters", TaskCategory::AllGather, {});
  run.wait_for(done);
}

}  // namespace dtsim
