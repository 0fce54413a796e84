// The NCCL environment a measurement ran under, as the user set it: NCCL_ALGO and NCCL_PROTO
// (a comma-separated list; a leading '^' excludes instead; since NCCL 2.24 per collective,
// "allreduce:tree,ring;broadcast:ring") and NCCL_NVLS_ENABLE=0, turned into the restriction NCCL
// applies to its choice. Other settings (NCCL_MIN_CTAS, NCCL_IB_QPS_PER_CONNECTION, ...) are kept
// so that a report can say they were not modelled. Facts: shared/reference/nccl-and-pytorch-model.md
// section 1.6.
#pragma once

#include "sim/collectives/collective.hpp"
#include "sim/collectives/nccl_tuning.hpp"

#include <string>
#include <utility>
#include <vector>

namespace dtsim {

/// NCCL_* settings in the order they were found; a later setting of a name overrides an earlier one.
using NcclEnv = std::vector<std::pair<std::string, std::string>>;

/// NCCL_ALGO / NCCL_PROTO as a command line gives them (--algo, --proto; "" when not given).
NcclEnv nccl_env_of(const std::string& algo, const std::string& proto);

/// The value `env` finally gives `name`, "" when unset.
std::string nccl_env_value(const NcclEnv& env, const std::string& name);

/// The NCCL_ALGO / NCCL_PROTO / NCCL_NVLS_ENABLE restriction `env` sets for `op` (an empty filter:
/// NCCL's own choice). Throws InputError naming `source` when a value is one NCCL would reject.
NcclFilter nccl_filter_from_env(const NcclEnv& env, CollectiveOp op, const std::string& source);

/// True for the settings dtsim applies (NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE).
bool nccl_env_modelled(const std::string& name);

/// "NCCL_ALGO=Ring (applied), NCCL_MIN_CTAS=24 (not modelled)": the final value of every setting
/// but NCCL_DEBUG*; "" when there is none.
std::string describe_nccl_env(const NcclEnv& env);

}  // namespace dtsim
