// What dtsim knows of a GPU kind: peak FLOP/s per precision, memory size and bandwidth.
#pragma once

#include <string>
#include <vector>

namespace dtsim {

enum class Precision { Fp32, Tf32, Amp, Fp16, Bf16 };

struct GpuSpec {
  std::string name;            ///< "V100-SXM2", "A100-SXM4", "H100-SXM", ...
  double fp32_flops = 0;       ///< peak FLOP/s, plain FP32 (CUDA cores)
  double tf32_flops = 0;       ///< peak with TF32 tensor cores (0 when the GPU has none)
  double fp16_flops = 0;       ///< peak half-precision tensor-core FLOP/s (dense)
  double bf16_flops = 0;
  double memory_bytes = 0;
  int compute_capability = 0;  ///< 70, 80, 90 ...
  double memory_bandwidth = 0; ///< device memory bytes/s (datasheet peak)
  int sms = 0;                 ///< streaming multiprocessors (architecture whitepapers); 0 = unknown

  /// Peak FLOP/s for the math a precision runs at (AMP and fp16/bf16 at the tensor-core peak).
  double peak_flops(Precision precision) const;
};

/// Looks up a GPU kind by name ("V100-SXM2", "A100", "H100-SXM", "RTX-4090", ...); throws
/// InputError naming `file`/`pointer` when unknown.
GpuSpec gpu_spec(const std::string& name, const std::string& file = "", const std::string& pointer = "");
std::vector<std::string> gpu_names();

const char* to_string(Precision precision);

}  // namespace dtsim
