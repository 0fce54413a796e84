#include "sim/collectives/nccl_params.hpp"

#include <nlohmann/json.hpp>

namespace dtsim {

NcclParams NcclParams::defaults(int cc)
{
  NcclParams p;
  if (cc >= 90)
    p.nvlink_efficiency = 370.0 / 450.0;
  else if (cc >= 80)
    p.nvlink_efficiency = 230.0 / 300.0;
  else
    p.nvlink_efficiency = 0.90;
  return p;
}

void NcclParams::override_from(const nlohmann::json& j)
{
  auto take = [&](const char* key, double& field) {
    if (j.contains(key) && j.at(key).is_number())
      field = j.at(key).get<double>();
  };
  take("nvlink_efficiency", nvlink_efficiency);
  take("pcie_efficiency", pcie_efficiency);
  take("pcie_shm_efficiency", pcie_shm_efficiency);
  take("network_efficiency", network_efficiency);
  take("nvls_efficiency", nvls_efficiency);
  take("hop_latency_scale", hop_latency_scale);
  take("launch_overhead_us", launch_overhead_us);
}

nlohmann::json NcclParams::to_json() const
{
  return {{"nvlink_efficiency", nvlink_efficiency},     {"pcie_efficiency", pcie_efficiency},
          {"pcie_shm_efficiency", pcie_shm_efficiency}, {"network_efficiency", network_efficiency},
          {"nvls_efficiency", nvls_efficiency},         {"hop_latency_scale", hop_latency_scale},
          {"launch_overhead_us", launch_overhead_us}};
}

}  // namespace dtsim
