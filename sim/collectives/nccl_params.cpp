#include "sim/collectives/nccl_params.hpp"

#include "sim/collectives/nccl_tuning.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace dtsim {

NcclParams NcclParams::defaults(int cc)
{
  NcclParams p;
  for (const NcclAlgo a : {NcclAlgo::Ring, NcclAlgo::Tree})
    p.class_hop_latency_scale[static_cast<std::size_t>(a)][static_cast<std::size_t>(NcclProto::LL)] = 1.0;
  p.class_hop_latency_scale[static_cast<std::size_t>(NcclAlgo::Tree)][static_cast<std::size_t>(NcclProto::LL128)] = 1.0;
  if (cc >= 90)
    p.nvlink_efficiency = 370.0 / 450.0;
  else if (cc >= 80) {
    p.nvlink_efficiency = 230.0 / 300.0;
    // A100 rings run LL128 slower than NCCL's table (12 channels x 20 GB/s, x 0.92) and start it
    // sooner than twice its hop latency: the shared NCCL 2.19 table's LL128 rows (4, 8, 16 MiB) lie
    // on 49.8 us + 13.9 us/MiB, i.e. 132 GB/s of bus bandwidth against the 212 simulated (0.62),
    // and a start-up of 8 launches x 2.5 + base 14 + 0.59 x 14 hops x 1.9 us. The A100 tables of
    // other machines (tests/data/nccl/a100) grow by 122-151 GB/s from 4 to 8 MiB too.
    p.ll128_rate_scale = 0.62;
    p.class_hop_latency_scale[static_cast<std::size_t>(NcclAlgo::Ring)][static_cast<std::size_t>(NcclProto::LL128)] = 0.59;
  }
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
  take("ll_rate_scale", ll_rate_scale);
  take("ll128_rate_scale", ll128_rate_scale);
  take("hop_latency_scale", hop_latency_scale);
  take("net_hop_latency_scale", net_hop_latency_scale);
  take("launch_overhead_us", launch_overhead_us);
  if (j.contains("hop_latency_scale_by_class") && j.at("hop_latency_scale_by_class").is_object())
    for (const auto& [name, value] : j.at("hop_latency_scale_by_class").items())
      if (const auto c = parse_nccl_class(name); c && value.is_number())
        class_hop_latency_scale[static_cast<std::size_t>(c->first)][static_cast<std::size_t>(c->second)] =
            value.get<double>();
  if (j.contains("net_hop_latency_scale_by_protocol") && j.at("net_hop_latency_scale_by_protocol").is_object())
    for (const auto& [name, value] : j.at("net_hop_latency_scale_by_protocol").items())
      if (const auto p = parse_nccl_proto(name); p && value.is_number())
        net_proto_hop_latency_scale[static_cast<std::size_t>(*p)] = value.get<double>();
}

nlohmann::json NcclParams::to_json() const
{
  nlohmann::json by_class = nlohmann::json::object();
  for (int a = 0; a < kNcclAlgos; ++a)
    for (int p = 0; p < kNcclProtos; ++p) {
      const double v = class_hop_latency_scale[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)];
      if (!std::isnan(v))
        by_class[std::string(to_string(static_cast<NcclAlgo>(a))) + "/" + to_string(static_cast<NcclProto>(p))] = v;
    }
  nlohmann::json out = {{"nvlink_efficiency", nvlink_efficiency},     {"pcie_efficiency", pcie_efficiency},
          {"pcie_shm_efficiency", pcie_shm_efficiency}, {"network_efficiency", network_efficiency},
          {"nvls_efficiency", nvls_efficiency},         {"ll_rate_scale", ll_rate_scale},
          {"ll128_rate_scale", ll128_rate_scale},       {"hop_latency_scale", hop_latency_scale},
          {"net_hop_latency_scale", net_hop_latency_scale},
          {"launch_overhead_us", launch_overhead_us}};
  if (!by_class.empty())
    out["hop_latency_scale_by_class"] = by_class;
  nlohmann::json by_protocol = nlohmann::json::object();
  for (int p = 0; p < kNcclProtos; ++p)
    if (!std::isnan(net_proto_hop_latency_scale[static_cast<std::size_t>(p)]))
      by_protocol[to_string(static_cast<NcclProto>(p))] = net_proto_hop_latency_scale[static_cast<std::size_t>(p)];
  if (!by_protocol.empty())
    out["net_hop_latency_scale_by_protocol"] = by_protocol;
  return out;
}

}  // namespace dtsim
