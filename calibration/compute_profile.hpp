// Measured compute on one GPU, as written by dtsim-bench-compute (GEMM / convolution sweeps) and
// calibration/bench/profile_model.py (per-layer forward/backward times of a model), and the
// "compute" fragment of a calibration file made from it. Schema: calibration/README.md.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::calibration {

struct KernelTiming {
  std::string kind;        ///< "gemm" or "conv"
  std::string precision;   ///< "fp32", "tf32", "fp16", "bf16"
  std::string shape;       ///< e.g. "m=4096 n=4096 k=4096"
  double flops = 0;        ///< floating-point operations of one call
  double median_s = 0, min_s = 0, max_s = 0;
  int repeats = 0;
  std::string file, pointer;  ///< where it was read (its file and JSON pointer), for errors
  double tflops() const { return flops / median_s / 1e12; }
};

struct LayerTiming {
  std::string name;        ///< layer name as in models/NAME.json
  double fwd_s = 0, bwd_s = 0;
  double fwd_spread_s = 0, bwd_spread_s = 0;   ///< max - min over repeats
};

struct ComputeProfile {
  std::string file;
  std::string gpu;                     ///< device name as the driver reports it
  std::vector<KernelTiming> kernels;
  std::string model;                   ///< models/NAME.json the layers belong to ("" if none)
  int batch = 0;                       ///< per-GPU batch of the layer timings
  std::string model_precision;
  std::vector<LayerTiming> layers;
  double optimizer_s = 0;              ///< optimizer step of one iteration (0 = not measured)
};

/// Reads one or more JSON files (a GEMM sweep and a model profile may come from different
/// programs); throws InputError naming the file and JSON pointer on bad input, or when two files
/// name different GPUs.
ComputeProfile load_compute_profile(const std::vector<std::string>& paths);
void read_compute_profile(const nlohmann::json& doc, const std::string& file, ComputeProfile& into);

/// Peak FLOP/s of the GPU per precision (from dtsim's GPU table), for the efficiency figures.
using PeakFlops = std::map<std::string, double>;

/// {"gpu", "gemm_tflops": {precision: best TFLOP/s}, "conv_tflops": {...},
///  "efficiency": {precision: best / peak}, "model": {...}, "layers": [{name, fwd_s, bwd_s}]}.
/// `model_layers`, when given, are the layer names of the model file: a timing of an unknown
/// layer is an InputError, layers of the model without a timing are listed in "missing_layers".
nlohmann::json compute_fragment(const ComputeProfile& profile, const PeakFlops& peak = {},
                                const std::optional<std::vector<std::string>>& model_layers = std::nullopt);

}  // namespace dtsim::calibration
