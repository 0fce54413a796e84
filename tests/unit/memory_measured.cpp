// The memory model (sim/strategies/saved_tensors.cpp, memory_timeline.cpp) against the peaks measured
// on one H200 (calibration/measured/h200-1gpu-2026-11-27: torchvision CNNs with SGD momentum, Hugging
// Face BERT-large, GPT-2 and GPT-2 XL with AdamW, fp32 and AMP, one steady iteration each). The
// measurements are a test, not an input: nothing here is fitted to them. Issue 30's targets: median
// error of the peak allocated bytes at most 5%, worst at most 10%. Reserved and device memory are
// printed beside them (the reserved bytes keep the first iterations' cuDNN benchmark trials, which
// are not modelled).
#include "sim/model/model.hpp"
#include "sim/strategies/memory_timeline.hpp"
#include "sim/topology/gpu_spec.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

using namespace dtsim;

namespace {

const std::string kMeasured = std::string(DTSIM_TESTS_DIR) + "/../calibration/measured/h200-1gpu-2026-11-27/";

struct Row {
  std::string name;
  double predicted = 0, measured = 0;
  double reserved = 0, measured_reserved = 0;
  double device = 0, measured_device = 0;
  std::string peak_at, measured_phase;
  double error() const { return (predicted - measured) / measured; }
};

Row predict(const nlohmann::json& c)
{
  const auto& cfg = c.at("config");
  const std::string family = cfg.at("family");
  const std::string model_name = cfg.at("model");
  const bool amp = cfg.at("precision") == "amp";
  const double batch = cfg.at("batch");
  const Model model = load_model(family == "bert" && cfg.value("seq", 512) == 128 ? "bert-large-seq128" : model_name);
  // The probe: SGD(momentum 0.9) for the CNNs, AdamW (PyTorch's default foreach, or foreach=False) for
  // the transformers (calibration/bench/memory_peaks.py).
  const std::string optimizer =
      family == "cnn" ? "sgd" : (cfg.contains("foreach") && cfg.at("foreach") == false ? "adamw-for-loop" : "adamw");
  const AttentionKernel attention = cfg.value("attn", "sdpa") == "eager" ? AttentionKernel::Eager : AttentionKernel::Sdpa;
  const MemoryContext ctx = memory_context(amp ? Precision::Amp : Precision::Fp32, optimizer, attention,
                                           ActivationCheckpointing::None, gpu_spec("H200"));
  StageMemoryRequest req;
  req.last = model.layers.size();
  req.micro_batch = batch;
  // The batch on the GPU: images in fp32 and int64 labels, or int64 token ids (GPT-2's labels are the ids).
  const bool tokens = model.layers.front().kind == "embedding";
  req.io_bytes = batch * (tokens ? model.input_elems * 8 : model.input_elems * 4 + 8);
  const GpuMemory m = gpu_memory(model, ctx, req);
  Row r;
  r.name = c.at("name");
  r.predicted = m.total();
  r.reserved = m.peak_reserved;
  r.device = m.device_used;
  r.peak_at = m.peak_at;
  const auto& measured = c.at("measured");
  r.measured = measured.at("peak_allocated");
  r.measured_reserved = measured.at("peak_reserved");
  r.measured_phase = measured.at("peak_phase");
  r.measured_device = std::stod(c.at("end").at("smi").at("compute_apps").at(0).at("used_MiB").get<std::string>()) *
                      1024 * 1024;
  return r;
}

std::vector<Row> rows()
{
  std::vector<Row> out;
  for (const char* file : {"memory_peaks.json", "memory_peaks_rest.json"}) {
    std::ifstream in(kMeasured + file);
    REQUIRE(in.good());
    const auto doc = nlohmann::json::parse(in);
    for (const auto& c : doc.at("configs"))
      if (c.value("status", "") == "ok")
        out.push_back(predict(c));
  }
  return out;
}

}  // namespace

TEST_CASE("peak allocated memory of one-GPU training against the H200 measurements (issue 30)")
{
  const std::vector<Row> all = rows();
  REQUIRE(all.size() >= 10);
  constexpr double GiB = 1024.0 * 1024 * 1024;
  std::string table = fmt::format("{:<28} {:>9} {:>9} {:>7}   {:>9} {:>9}   {:>9} {:>9}   {}\n", "configuration",
                                  "predicted", "measured", "error", "reserved", "measured", "device", "measured",
                                  "peak at (predicted / measured)");
  std::vector<double> errors;
  for (const auto& r : all) {
    errors.push_back(std::abs(r.error()));
    table += fmt::format("{:<28} {:>9.2f} {:>9.2f} {:>+6.1f}%   {:>9.2f} {:>9.2f}   {:>9.2f} {:>9.2f}   {} / {}\n",
                         r.name, r.predicted / GiB, r.measured / GiB, 100 * r.error(), r.reserved / GiB,
                         r.measured_reserved / GiB, r.device / GiB, r.measured_device / GiB, r.peak_at,
                         r.measured_phase);
  }
  std::sort(errors.begin(), errors.end());
  const double median = errors.size() % 2 ? errors[errors.size() / 2]
                                          : (errors[errors.size() / 2 - 1] + errors[errors.size() / 2]) / 2;
  const double worst = errors.back();
  table += fmt::format("peak allocated: |error| median {:.1f}%, worst {:.1f}% over {} configurations (GiB)\n",
                       100 * median, 100 * worst, errors.size());
  MESSAGE(table);
  CHECK(median <= 0.05);
  CHECK(worst <= 0.10);
}
