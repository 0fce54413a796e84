// A hand-made machine for engine tests: two GPUs on one switch, 10 GB/s and 1 us per link.
#pragma once

#include "sim/topology/topology.hpp"

#include <string>

namespace dtsim::testing {

inline Topology two_gpu_pair()
{
  Topology t;
  t.name = "pair";
  const int sw = t.add_device("switch", DeviceKind::NetworkSwitch);
  for (int g = 0; g < 2; ++g) {
    const int d = t.add_device("gpu" + std::to_string(g), DeviceKind::Gpu, 0, g);
    t.add_link("l" + std::to_string(g), LinkKind::Network, d, sw, 10e9, 1e-6);
    t.add_gpu_rank(d);
  }
  t.gpus_per_node = 2;
  return t;
}

}  // namespace dtsim::testing
