// The physical parameters the NCCL-faithful collectives read, beyond the topology's nominal link
// rates: what fraction of a link's line rate NCCL's kernels reach, and how much slower NCCL's
// per-step synchronisation is than its own tuning tables claim. Defaults per GPU architecture come
// from NVIDIA engineers' statements (shared/reference/link-bandwidths.md); a calibration file's
// "nccl" section overrides them (see calibration/calibration_file.hpp).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cmath>
#include <limits>

namespace dtsim {

struct NcclParams {
  /// Payload fraction of NVLink line rate reached by NCCL's SM copies (128-byte payloads):
  /// V100 0.90, A100 ~230 of 300 GB/s = 0.77, H100 370 of 450 GB/s = 0.822.
  double nvlink_efficiency = 0.8;
  /// PCIe with peer-to-peer: ~12 of 15.75 GB/s (gen3) = 0.78.
  double pcie_efficiency = 0.78;
  /// GPU-to-GPU traffic staged through host memory (no P2P, NCCL's SHM transport).
  double pcie_shm_efficiency = 0.5;
  /// Network: 46-48 GB/s per 400 Gb/s NIC = 0.96 (AddyLaddy, nccl-tests#290).
  double network_efficiency = 0.96;
  /// NVLink SHARP efficiency (tuning.cc nvlsEfficiency, Hopper 0.85).
  double nvls_efficiency = 0.85;
  /// Multiply the LL and LL128 protocols' payload rate (their payload fraction and NCCL's caps):
  /// those rates are set by the SMs' flag polling and line packing, not by the links, so a
  /// calibration fits them apart from the link efficiencies, which Simple rows measure. A100's
  /// default LL128 rate is 0.62 of NCCL's (`defaults`).
  double ll_rate_scale = 1.0;
  double ll128_rate_scale = 1.0;
  /// Multiplies NCCL's intra-node per-hop latencies (NVLink/PCI hwLat) of LL128 and Simple: their
  /// measured per-step costs on one node are about twice the tables'. LL's hops keep the tables'
  /// values (class scales Ring/LL and Tree/LL of 1.0 in `defaults`): with the launches counted per
  /// GPU, they match single-node rings and multi-node trees alike. So do Tree/LL128's (1.0): 2- and
  /// 4-node H100 trees at 256 KiB-1 MiB (XE9680 47-74 us, issue 309's 4-node VMs 67-82 us).
  /// A100's Ring/LL128 hops default to 0.59 (its measured LL128 start-up).
  double hop_latency_scale = 2.0;
  /// Multiplies NCCL's inter-node (NET hwLat) hop latencies, which tuning.cc already sets from
  /// network measurements: 1.0 by default (2-node H100 Tree/LL: 25-30 us measured).
  double net_hop_latency_scale = 1.0;
  /// Per protocol (NcclProto index): a fitted network hop scale replacing net_hop_latency_scale
  /// for that protocol (NaN: not fitted). NCCL tabulates each protocol's NET latency apart, and a
  /// log whose cross-node rows are all LL128 and Simple says nothing of LL's. In JSON
  /// "net_hop_latency_scale_by_protocol": {"Simple": x, ...}.
  std::array<double, 3> net_proto_hop_latency_scale = {std::numeric_limits<double>::quiet_NaN(),
                                                       std::numeric_limits<double>::quiet_NaN(),
                                                       std::numeric_limits<double>::quiet_NaN()};
  /// Cost of one kernel launch outside the collective (launch, stream synchronisation), us; a
  /// thread that drives several GPUs (nccl-tests -g 8) pays it once per GPU. 2.5 us: single-node
  /// -g 8 floors of 35.5 us (A100, NCCL 2.19) and 42 us (8 x 4090) less NCCL's Ring/LL latency.
  double launch_overhead_us = 2.5;
  /// Per (algorithm, protocol) class: a fitted hop-latency scale replacing hop_latency_scale for
  /// that class (NaN: not fitted, use hop_latency_scale). Indices as NcclAlgo x NcclProto; in JSON
  /// "hop_latency_scale_by_class": {"Tree/LL": x, "NVLSTree/Simple": y, ...}.
  std::array<std::array<double, 3>, 7> class_hop_latency_scale = nan_classes();

  /// The rate scale of protocol `proto` (NcclProto index): 1 for Simple.
  double protocol_rate_scale(int proto) const { return proto == 0 ? ll_rate_scale : proto == 1 ? ll128_rate_scale : 1.0; }
  /// The hop-latency scale of class (algo, proto) (NcclAlgo, NcclProto indices).
  double hop_scale(int algo, int proto) const
  {
    const double v = class_hop_latency_scale[static_cast<std::size_t>(algo)][static_cast<std::size_t>(proto)];
    return std::isnan(v) ? hop_latency_scale : v;
  }
  /// The network hop-latency scale of protocol `proto` (NcclProto index).
  double net_hop_scale(int proto) const
  {
    const double v = net_proto_hop_latency_scale[static_cast<std::size_t>(proto)];
    return std::isnan(v) ? net_hop_latency_scale : v;
  }
  static std::array<std::array<double, 3>, 7> nan_classes()
  {
    std::array<std::array<double, 3>, 7> a{};
    for (auto& row : a)
      row.fill(std::numeric_limits<double>::quiet_NaN());
    return a;
  }

  /// Defaults for a GPU of compute capability `cc`.
  static NcclParams defaults(int compute_capability);
  /// Applies the members present in a calibration file's "nccl" object.
  void override_from(const nlohmann::json& nccl);
  nlohmann::json to_json() const;
};

}  // namespace dtsim
