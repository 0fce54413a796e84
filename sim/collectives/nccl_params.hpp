// The physical parameters the NCCL-faithful collectives read, beyond the topology's nominal link
// rates: what fraction of a link's line rate NCCL's kernels reach, and how much slower NCCL's
// per-step synchronisation is than its own tuning tables claim. Defaults per GPU architecture come
// from NVIDIA engineers' statements (shared/reference/link-bandwidths.md); a calibration file's
// "nccl" section overrides them (see calibration/calibration_file.hpp).
#pragma once

#include <nlohmann/json_fwd.hpp>

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
  /// Multiplies NCCL's per-hop latency tables (hwLat): measured per-step costs are larger.
  double hop_latency_scale = 2.0;
  /// Per-operation cost outside the collective (kernel launch, stream synchronisation), us.
  double launch_overhead_us = 4.0;

  /// Defaults for a GPU of compute capability `cc`.
  static NcclParams defaults(int compute_capability);
  /// Applies the members present in a calibration file's "nccl" object.
  void override_from(const nlohmann::json& nccl);
  nlohmann::json to_json() const;
};

}  // namespace dtsim
