// When a scenario's GPUs do not fit: the changes that would make them fit, each one planned with the
// scenario (its memory model, no simulation), so that what the verdict suggests is what dtsim itself
// would then say fits.
#pragma once

#include "sim/predict/predict.hpp"

#include <vector>

namespace dtsim {

/// The candidate changes, in this order, each planned (a change the scenario then refuses is left
/// out):
///   - activation recomputation: selective (Megatron's) where none, and full;
///   - the largest micro-batch (training.micro_batch, or batch_per_gpu where the batch is given so)
///     that fits, by bisection over the values the scenario accepts (memory grows with it); with a
///     global batch, the micro-steps member it then decides is removed; a pipeline split by
///     strategy.microbatches also gets the fewest micro-batches that fit (the same batch, smaller
///     micro-batches);
///   - sharding more, by strategy: a replica (single, ddp, dp) to FSDP, ZeRO-2 and ZeRO-3; FSDP to
///     full_shard, to resharding after forward, to its CPU offload; ZeRO to stage 3 and to
///     ZeRO-Offload of the optimizer (and at stage 3 the parameters; stage 3 only over more than one
///     GPU); Megatron's hybrid to the
///     distributed optimizer and to sequence parallelism;
///   - more tensor parallelism (up to a node's GPUs) for a transformer under fsdp or hybrid;
///   - when none of those fits alone, each strategy change with full recomputation.
std::vector<FitAlternative> fit_alternatives(const Scenario& scenario);

}  // namespace dtsim
