// Which link efficiencies a simulated nccl-tests row's time depends on, and how much of it: the
// NCCL fit's attribution of each row's transfer time. A row's bottleneck is not a property of its
// (algorithm, protocol) alone: a 2-node NVLSTree AllReduce is bound by NVLink SHARP, the same
// algorithm on 4 nodes by the NICs (an inner node of a tree carries twice the bytes). So each
// candidate efficiency is lowered by a small step and the rows simulated again; the time a row
// gains, over the step's relative slow-down, is the part of its time that scales as
// 1 / efficiency: its whole transfer where that class alone is the bottleneck, none where another
// class is, a share where phases of the collective are bound by different classes.
#pragma once

#include "sim/collectives/collective_options.hpp"
#include "sim/topology/topology.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim {

/// The NcclParams member a link-efficiency or protocol-rate name stands for ("nvlink_efficiency",
/// "network_efficiency", "nvls_efficiency", "pcie_efficiency", "pcie_shm_efficiency",
/// "ll_rate_scale", "ll128_rate_scale").
double& nccl_rate_parameter(NcclParams& params, const std::string& name);

/// The link efficiencies that can bound a collective on `topology`: one per kind of link its GPU
/// routes and NICs use, and NVLink SHARP where the GPUs have it.
std::vector<std::string> candidate_link_efficiencies(const Topology& topology);

/// Whether the transfer of a row NCCL runs as (algo, proto) is attributed to `efficiency`'s share:
/// LL and LL128 rows go to their protocol's rate scale instead (their pace is the protocol's, not
/// the links'), and NVLS rows to nvls_efficiency, not NVLink's (an NVLS transfer's rate is the
/// NVLink rate times it: the two shares are equal, and NVLink is left to the rows that use it alone).
bool link_share_applies(const std::string& efficiency, NcclAlgo algo, NcclProto proto);

/// Per candidate efficiency, per size: the simulated time (us) that scales as 1 / efficiency.
struct EfficiencyShares {
  std::string name;
  std::vector<double> us;  ///< one per size, as `sizes`
};

/// `base_us`: the sweep's times under `options` (one per size); each candidate is simulated once
/// more with its efficiency lowered by 1%.
std::vector<EfficiencyShares> efficiency_shares(const Topology& topology, CollectiveOp op,
                                                const std::vector<std::uint64_t>& sizes,
                                                const CollectiveOptions& options, const std::vector<double>& base_us);

}  // namespace dtsim
