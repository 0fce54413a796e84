// training.attention_kernel (sim/strategies/attention_rate.hpp): a FlashAttention-2-class kernel
// (mma.sync) runs at 2/3 of the GEMMs' FLOP rate on Hopper and at their rate elsewhere; wgmma kernels
// (flash3, cudnn), the default (auto) and eager attention at the GEMMs' rate. Closed forms on the FLOP
// source, a measured step spread over the layers, the roofline's fused kernel, and the parse errors.
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/scenario_model.hpp"
#include "sim/strategies/attention_rate.hpp"
#include "sim/strategies/compute_time.hpp"
#include "sim/topology/gpu_spec.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

#include <numeric>
#include <string>

using namespace dtsim;
using nlohmann::json;

namespace {

json doc(const std::string& gpu, const json& compute, const json& extra = json::object())
{
  json training = {{"dataset_samples", 1000}, {"batch_per_gpu", 2}, {"epochs", 1}, {"precision", "bf16"}, {"compute", compute}};
  training.update(extra);
  return {{"cluster", {{"base", "hgx-h100"}, {"nodes", 1}, {"gpu", gpu}}},
          {"model",
           {{"family", "mpt"}, {"hidden", 2048}, {"layers", 4}, {"heads", 16}, {"seq_len", 8192}, {"vocab", 50368}}},
          {"training", training},
          {"strategy", {{"kind", "ddp"}}},
          {"gpus", 1}};
}

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

}  // namespace

TEST_CASE("attention rate: mma.sync kernels at 2/3 of the GEMMs' rate on Hopper only")
{
  TrainingSpec t;
  const GpuSpec h100 = gpu_spec("H100-SXM"), h200 = gpu_spec("H200"), a100 = gpu_spec("A100-SXM4-80GB");
  CHECK(attention_rate_factor(t, h100) == 1.0);  // auto
  t.attention_kernel = FusedAttentionKernel::Flash2;
  CHECK(attention_rate_factor(t, h100) == doctest::Approx(2.0 / 3.0));
  CHECK(attention_rate_factor(t, h200) == doctest::Approx(2.0 / 3.0));
  CHECK(attention_rate_factor(t, a100) == 1.0);
  CHECK(attention_rate_note(t, a100).empty());
  CHECK(attention_rate_note(t, h100) == "attention (flash2: mma.sync on H100-SXM) at 67% of the GEMMs' rate");
  for (const auto k : {FusedAttentionKernel::Flash3, FusedAttentionKernel::Cudnn}) {
    t.attention_kernel = k;
    CHECK(attention_rate_factor(t, h100) == 1.0);
  }
  t.attention_kernel = FusedAttentionKernel::Flash2;
  t.attention = AttentionKernel::Eager;  // cuBLAS's batched GEMMs
  CHECK(attention_rate_factor(t, h100) == 1.0);
}

TEST_CASE("attention rate: the FLOP source times attention layers 1.5 x longer, every other layer as before")
{
  const json compute = {{"efficiency", 0.5}};
  for (const std::string gpu : {"H100-SXM", "A100-SXM4-80GB"}) {
    const Scenario base = parse_scenario(doc(gpu, compute), "s.json");
    const Scenario flash2 = parse_scenario(doc(gpu, compute, {{"attention_kernel", "flash2"}}), "s.json");
    const Scenario cudnn = parse_scenario(doc(gpu, compute, {{"attention_kernel", "cudnn"}}), "s.json");
    const Model model = scenario_model(base);
    const GpuSpec g = gpu_spec(gpu);
    const LayerTimes a = layer_times(model, base, g, 2), b = layer_times(model, flash2, g, 2),
                     c = layer_times(model, cudnn, g, 2);
    const double slow = gpu == "H100-SXM" ? 1.5 : 1.0;
    int attention_layers = 0;
    for (std::size_t i = 0; i < model.layers.size(); ++i) {
      const bool attention = model.layers[i].kind == "attention";
      attention_layers += attention;
      CHECK(b.fwd[i] == doctest::Approx(a.fwd[i] * (attention ? slow : 1.0)).epsilon(1e-12));
      CHECK(b.bwd[i] == doctest::Approx(a.bwd[i] * (attention ? slow : 1.0)).epsilon(1e-12));
      CHECK(c.fwd[i] == doctest::Approx(a.fwd[i]).epsilon(1e-12));
    }
    CHECK(attention_layers == 4);
  }
}

TEST_CASE("attention rate: a measured step keeps its total, with more of it in attention")
{
  const json compute = {{"step_time_s", 1.0}};
  const Scenario base = parse_scenario(doc("H100-SXM", compute), "s.json");
  const Scenario flash2 = parse_scenario(doc("H100-SXM", compute, {{"attention_kernel", "flash2"}}), "s.json");
  const Model model = scenario_model(base);
  const GpuSpec g = gpu_spec("H100-SXM");
  const LayerTimes a = layer_times(model, base, g, 2), b = layer_times(model, flash2, g, 2);
  CHECK(sum(b.fwd) == doctest::Approx(sum(a.fwd)).epsilon(1e-12));
  double fa = 0, fb = 0;
  for (std::size_t i = 0; i < model.layers.size(); ++i)
    if (model.layers[i].kind == "attention") {
      fa += a.fwd[i];
      fb += b.fwd[i];
    }
  // share s at rate 1 becomes 1.5 s / (1 + 0.5 s)
  const double s = fa / sum(a.fwd);
  CHECK(fb / sum(b.fwd) == doctest::Approx(1.5 * s / (1 + 0.5 * s)).epsilon(1e-12));
}

TEST_CASE("attention rate: the roofline's fused kernel, compute-bound at 8192 tokens, 1.5 x longer on H100")
{
  const json compute = {{"efficiency", 0.5}, {"model", "roofline"}};
  const Scenario base = parse_scenario(doc("H100-SXM", compute), "s.json");
  const Scenario flash2 = parse_scenario(doc("H100-SXM", compute, {{"attention_kernel", "flash2"}}), "s.json");
  const Model model = scenario_model(base);
  const GpuSpec g = gpu_spec("H100-SXM");
  const LayerTimes a = layer_times(model, base, g, 2), b = layer_times(model, flash2, g, 2);
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const bool attention = model.layers[i].kind == "attention";
    CHECK(b.fwd[i] == doctest::Approx(a.fwd[i] * (attention ? 1.5 : 1.0)).epsilon(1e-9));
  }
  CHECK(compute_spread_note(flash2, g).find("67% of the GEMMs' rate") != std::string::npos);
  CHECK(compute_spread_note(base, g).find("GEMMs' rate") == std::string::npos);
}

TEST_CASE("attention rate: training.attention_kernel's bad values")
{
  const json compute = {{"efficiency", 0.5}};
  CHECK_THROWS_WITH_AS(parse_scenario(doc("H100-SXM", compute, {{"attention_kernel", "flash4"}}), "s.json"),
                       doctest::Contains("/training/attention_kernel"), InputError);
  CHECK_THROWS_WITH_AS(
      parse_scenario(doc("H100-SXM", compute, {{"attention", "eager"}, {"attention_kernel", "flash2"}}), "s.json"),
      doctest::Contains("expected no attention_kernel with training.attention eager"), InputError);
}
