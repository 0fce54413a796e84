// NCCL's topology search (src/graph/search.cc) as far as dtsim models it: the rings it finds inside
// an NVSwitch node, which set the channels tuning.cc's bandwidths multiply (nccl_tuning.hpp) and the
// CTAs NCCL launches (nccl_comm_channels).
#pragma once

namespace dtsim {

/// What NCCL's ring search finds inside one NVSwitch node: `channels` rings of `bw` GB/s each.
struct NcclRingSearch {
  int channels = 1;
  double bw = 0;
};
/// ncclTopoCompute's first pass (src/graph/search.cc) over a node whose GPUs reach each other
/// through NVSwitch with `total` GB/s each (lanes x nccl_nvlink_bw_per_link): start at the
/// architecture's first speed at or below `total`; at each speed the search fits floor(total /
/// speed) rings (at most maxChannels, MAXCHANNELS / 2 = 32); stop once channels x speed reaches
/// `total`; try the next lower speed while it is above 0.49 of the best found; keep the first of
/// equal channels x speed. Then ncclTopoDupChannels: twice the rings at half the speed when
/// speed >= 25 and not (compute capability > 80, speed < 50 and more than 4 rings). Pass 2
/// cannot raise the speed of that many rings on the same links. H100 (18 x 20.6 = 370.8): 6 x 60
/// -> 12 x 30 (24 CTAs after ncclTopoPostset, as a p5.48xlarge log prints "24 coll channels");
/// A100 (12 x 20): 6 x 40 -> 12 x 20; B200 (18 x 40.1): 8 x 90 -> 16 x 45.
NcclRingSearch nccl_nvswitch_ring_search(double total, int compute_capability);

/// NCCL's NVLS graph on one node (pattern NVLS, Hopper and later).
struct NcclNvlsGraph {
  int channels = 0;     ///< one per GPU, each GPU a head once (NCCL_MAX_NVLS_ARITY, 32, at most)
  double bw_intra = 0;  ///< GB/s
  double bw_inter = 0;  ///< GB/s, raised by pass 2
};
/// ncclTopoCompute for the NVLS pattern inside one node of `ppn` GPUs, each reaching the NVSwitch
/// with `total` GB/s: the channels are forced to one per GPU ("pull evenly from all GPUs"); a channel
/// loads its head's link twice and every other GPU's once (ncclTopoSearchTryNvls), so bwIntra is the
/// first speed of the architecture's table with (ppn + 1) x speed <= total; pass 2 then raises
/// bwInter speed by speed while below twice bwIntra (nothing inside a node spends it). H100 8 GPUs:
/// 8 x 40, bwInter 60; 4 GPUs 4 x 60, 60; 2 GPUs 2 x 60, 60. B200 8 GPUs: 8 x 80, bwInter 90.
NcclNvlsGraph nccl_nvls_graph_search(double total, int ppn, int compute_capability);

}  // namespace dtsim
