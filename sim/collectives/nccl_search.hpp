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

}  // namespace dtsim
