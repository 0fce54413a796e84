// training.compute.model "roofline" (sim/strategies/roofline.hpp): closed forms for a pure GEMM and a
// pure elementwise layer, tensor and sequence parallelism's split, and the physics it exists for (a
// wider transformer reaches a larger share of peak).
#include "sim/model/transformer_family.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/memory.hpp"
#include "sim/strategies/optimizer_step.hpp"
#include "sim/strategies/roofline.hpp"
#include "sim/topology/gpu_spec.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <utility>

using namespace dtsim;

namespace {

Layer linear(const std::string& name, double fan_in, double fan_out, double tokens)
{
  Layer l;
  l.name = l.block = name;
  l.kind = "linear";
  l.param_tensors = {static_cast<std::int64_t>(fan_in * fan_out)};
  l.fwd_flops = 2 * fan_in * fan_out * tokens;
  l.activation_elems = fan_out * tokens;
  return l;
}

Layer layernorm(const std::string& name, double hidden, double tokens)
{
  Layer l;
  l.name = l.block = name;
  l.kind = "layernorm";
  l.param_tensors = {static_cast<std::int64_t>(hidden), static_cast<std::int64_t>(hidden)};
  l.activation_elems = hidden * tokens;
  return l;
}

/// A model of one layer fed `input_elems` elements per sample.
Model one_layer_model(const std::string& name, double input_elems, Layer layer)
{
  Model m;
  m.name = name;
  m.input_elems = input_elems;
  m.layers = {std::move(layer)};
  return m;
}

RooflineSettings settings(int tensor = 1, bool sequence_parallel = false)
{
  RooflineSettings s;
  s.rates = {100e12, 1e12};  // 100 TFLOP/s, 1 TB/s
  s.element_bytes = 2;
  s.fused_elementwise = true;
  s.split = {tensor, sequence_parallel};
  return s;
}

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

nlohmann::json scenario_doc(const nlohmann::json& compute)
{
  return {{"cluster", {{"base", "dgx-a100"}, {"nodes", 1}, {"gpu", "A100-SXM4-80GB"}}},
          {"model", "gpt2"},
          {"training",
           {{"dataset_samples", 1000}, {"batch_per_gpu", 8}, {"epochs", 1}, {"precision", "fp16"}, {"compute", compute}}},
          {"strategy", {{"kind", "ddp"}}},
          {"gpus", 1}};
}

}  // namespace

TEST_CASE("roofline: a kernel takes the longer of its FLOPs and its bytes")
{
  const RooflineRates r{100e12, 1e12};
  CHECK(kernel_seconds({1e12, 1e9}, r) == doctest::Approx(0.01));    // compute-bound: 1e12 / 1e14
  CHECK(kernel_seconds({1e9, 1e10}, r) == doctest::Approx(0.01));    // memory-bound: 1e10 / 1e12
  CHECK(kernel_seconds({0, 2e9}, r) == doctest::Approx(0.002));
}

TEST_CASE("roofline: a pure GEMM layer keeps the FLOP source's time (forward, and backward 2 x forward)")
{
  const Model m = one_layer_model("one-gemm", 8192 * 2048, linear("fc", 8192, 8192, 2048));
  const double samples = 4;
  const LayerTimes t = roofline_layer_times(m, settings(), samples);
  const double flops_time = samples * m.layers[0].fwd_flops / 100e12;  // FLOPs / (peak x efficiency)
  CHECK(t.fwd[0] == doctest::Approx(flops_time).epsilon(1e-12));
  CHECK(t.bwd[0] == doctest::Approx(2 * flops_time).epsilon(1e-12));
  // Split over 8 tensor ranks: each does 1/8; summed over the group, the same.
  const LayerTimes t8 = roofline_layer_times(m, settings(8), samples);
  CHECK(t8.fwd[0] == doctest::Approx(flops_time).epsilon(1e-12));
}

TEST_CASE("roofline: a pure elementwise layer takes bytes / bandwidth")
{
  const double hidden = 4096, tokens = 2048, samples = 2;
  Model m = one_layer_model("one-norm", hidden * tokens, layernorm("ln", hidden, tokens));
  const double elems = samples * hidden * tokens;
  const LayerTimes t = roofline_layer_times(m, settings(), samples);
  CHECK(t.fwd[0] == doctest::Approx(2 * 2 * elems / 1e12));  // read x, write y, 2 B each
  CHECK(t.bwd[0] == doctest::Approx(3 * 2 * elems / 1e12));  // read x and dy, write dx

  SUBCASE("its then chain: one fused kernel (Megatron's bias_dropout_add), or one kernel per op")
  {
    m.layers[0].then = {"dropout", "add"};
    const LayerTimes fused = roofline_layer_times(m, settings(), samples);
    // read input + residual, write output + 1 B mask
    CHECK(fused.fwd[0] - t.fwd[0] == doctest::Approx((2 * 2 + 2 + 1) * elems / 1e12));
    RooflineSettings eager = settings();
    eager.fused_elementwise = false;
    const LayerTimes apart = roofline_layer_times(m, eager, samples);
    // dropout: read, write, mask; add: two reads, one write
    CHECK(apart.fwd[0] - t.fwd[0] == doctest::Approx((2 * 2 + 1 + 3 * 2) * elems / 1e12));
  }

  SUBCASE("tensor parallelism repeats it on every rank; sequence parallelism splits it")
  {
    const LayerTimes tp = roofline_layer_times(m, settings(8, false), samples);
    CHECK(tp.fwd[0] == doctest::Approx(8 * t.fwd[0]));  // summed over the group: 8 whole copies
    const LayerTimes sp = roofline_layer_times(m, settings(8, true), samples);
    CHECK(sp.fwd[0] == doctest::Approx(t.fwd[0]));
  }
}

TEST_CASE("roofline: an eager RMSNorm is its seven kernels with an fp32 upcast; fused, one read and one write")
{
  const double hidden = 4096, tokens = 2048, samples = 2;
  Model m = one_layer_model("one-rmsnorm", hidden * tokens, layernorm("norm", hidden, tokens));
  m.layers[0].op = "rms";
  const double elems = samples * hidden * tokens;
  RooflineSettings eager = settings();
  eager.fused_elementwise = false;
  const LayerTimes e = roofline_layer_times(m, eager, samples);
  // bf16: cast up 6, pow 8, mean 4, x rsqrt 8, cast down 6, x weight 4 = 36 B forward;
  // backward: weight 2e + 4e, cast 6, x rsqrt 2f + 4f, mean f, pow 7f, sum of xf's gradients 3f, cast 6 = 92 B
  CHECK(e.fwd[0] == doctest::Approx(36 * elems / 1e12));
  CHECK(e.bwd[0] == doctest::Approx(92 * elems / 1e12));
  const LayerTimes f = roofline_layer_times(m, settings(), samples);  // torch.compile or Megatron's kernel
  CHECK(f.fwd[0] == doctest::Approx(2 * 2 * elems / 1e12));
  CHECK(f.bwd[0] == doctest::Approx(3 * 2 * elems / 1e12));
  // a LayerNorm is one ATen kernel either way
  m.layers[0].op.clear();
  CHECK(roofline_layer_times(m, eager, samples).fwd[0] == doctest::Approx(f.fwd[0]));

  SUBCASE("in fp32 the casts are no kernels: 28 B forward, 92 B backward")
  {
    m.layers[0].op = "rms";
    eager.element_bytes = 4;
    const LayerTimes t = roofline_layer_times(m, eager, samples);
    CHECK(t.fwd[0] == doctest::Approx(28 * elems / 1e12));
    CHECK(t.bwd[0] == doctest::Approx(92 * elems / 1e12));
  }

  SUBCASE("a rotary embedding after a LayerNorm: cast up, complex multiply, cast down, or within the fused chain")
  {
    m.layers[0].then = {"rotary"};  // (a LayerNorm here: op cleared above)
    const LayerTimes r = roofline_layer_times(m, eager, samples);
    CHECK(r.fwd[0] == doctest::Approx((4 + 20) * elems / 1e12));  // 6 + 8 + 6 B on top of the norm's 4
    CHECK(r.bwd[0] == doctest::Approx((6 + 20) * elems / 1e12));
    const LayerTimes fused = roofline_layer_times(m, settings(), samples);
    CHECK(fused.fwd[0] == doctest::Approx((4 + 4) * elems / 1e12));  // the fused chain's read and write
    CHECK(fused.bwd[0] == doctest::Approx((6 + 4) * elems / 1e12));
  }
}

TEST_CASE("roofline: a wider transformer layer spends a smaller share in memory-bound kernels")
{
  // Korthikanti et al. 2022's 22B and 175B (hidden 6144 / 12288, 64 / 96 heads, TP 8, sequence
  // parallel, micro-batch 4 / 1): the FLOP-only time over the roofline time of one layer.
  RooflineSettings s = settings(8, true);
  s.rates = {312e12 * 0.6, 2039e9 * kDefaultMemoryEfficiency};
  s.attention = AttentionKernel::Eager;
  const auto share = [&](std::int64_t hidden, std::int64_t heads, double micro) {
    TransformerSpec spec;
    spec.hidden = hidden;
    spec.heads = heads;
    spec.layers = 1;
    spec.seq_len = 2048;
    spec.vocab = 51200;
    const Model m = build_transformer(spec);
    double flops = 0;
    for (const auto& l : m.layers)
      if (l.name.find(".h.0.") != std::string::npos)
        flops += l.fwd_flops;
    const LayerTimes t = roofline_layer_times(m, s, micro);
    double roof = 0;
    for (std::size_t i = 0; i < m.layers.size(); ++i)
      if (m.layers[i].name.find(".h.0.") != std::string::npos)
        roof += t.fwd[i] + t.bwd[i];
    return 3 * micro * flops / s.rates.flops_per_s / roof;
  };
  const double s22 = share(6144, 64, 4), s175 = share(12288, 96, 1);
  CHECK(s22 < s175);
  CHECK(s22 > 0.7);
  CHECK(s175 < 1.0);
}

TEST_CASE("roofline: chosen in training.compute; the FLOP source's times unchanged otherwise")
{
  const GpuSpec gpu = gpu_spec("A100-SXM4-80GB");
  const Scenario plain = parse_scenario(scenario_doc({{"gpu", "A100-SXM4-80GB"}, {"efficiency", 0.5}}), "s.json");
  const Scenario flops =
      parse_scenario(scenario_doc({{"gpu", "A100-SXM4-80GB"}, {"efficiency", 0.5}, {"model", "flops"}}), "s.json");
  const Scenario roof =
      parse_scenario(scenario_doc({{"gpu", "A100-SXM4-80GB"}, {"efficiency", 0.5}, {"model", "roofline"}}), "s.json");
  const Model model = load_model("gpt2");
  const LayerTimes a = layer_times(model, plain, gpu, 8), b = layer_times(model, flops, gpu, 8),
                   c = layer_times(model, roof, gpu, 8);
  CHECK(a.fwd == b.fwd);
  CHECK(a.bwd == b.bwd);
  for (std::size_t i = 0; i < a.fwd.size(); ++i)
    CHECK(c.fwd[i] >= a.fwd[i] * (1 - 1e-12));  // never faster than its FLOPs at the same efficiency
  CHECK(sum(c.fwd) > sum(a.fwd));
  CHECK(describe_compute_source(roof).find("73.5% of its HBM bandwidth") != std::string::npos);

  const Scenario half = parse_scenario(
      scenario_doc({{"gpu", "A100-SXM4-80GB"}, {"efficiency", 0.5}, {"model", "roofline"}, {"memory_efficiency", 0.3675}}),
      "s.json");
  const LayerTimes d = layer_times(model, half, gpu, 8);
  CHECK(sum(d.fwd) > sum(c.fwd));

  CHECK_THROWS_AS(parse_scenario(scenario_doc({{"gpu", "A100"}, {"efficiency", 0.5}, {"model", "rooftop"}}), "s.json"),
                  InputError);
  CHECK_THROWS_AS(parse_scenario(scenario_doc({{"gpu", "A100"}, {"efficiency", 0.5}, {"memory_efficiency", 0.8}}), "s.json"),
                  InputError);
  CHECK_THROWS_AS(parse_scenario(scenario_doc({{"step_time_s", 1.0}, {"model", "roofline"}}), "s.json"), InputError);
}

TEST_CASE("training.compile: the roofline fuses an eager Llama's RMSNorms, rotary embeddings and SwiGLU; FLOPs do not move")
{
  const GpuSpec gpu = gpu_spec("H100-SXM");
  const auto scenario = [](const char* model, bool compile) {
    nlohmann::json doc = scenario_doc({{"efficiency", 0.5}, {"model", model}});
    doc["model"] = "llama3-8b";
    doc["training"]["precision"] = "bf16";
    doc["training"]["compile"] = compile;
    return parse_scenario(doc, "s.json");
  };
  const Model llama = load_model("llama3-8b");
  const LayerTimes eager = layer_times(llama, scenario("roofline", false), gpu, 1);
  const LayerTimes compiled = layer_times(llama, scenario("roofline", true), gpu, 1);
  // torchtitan's Llama 3.1 8B on 8 H100 ran 15.7% faster compiled (fsdp_runs.csv); its layers' compute alone here:
  const double gain = (sum(eager.fwd) + sum(eager.bwd)) / (sum(compiled.fwd) + sum(compiled.bwd));
  CHECK(gain > 1.10);
  CHECK(gain < 1.30);
  for (std::size_t i = 0; i < eager.fwd.size(); ++i)
    CHECK(compiled.fwd[i] <= eager.fwd[i] * (1 + 1e-12));
  CHECK(describe_compute_source(scenario("roofline", true)).find("fused by torch.compile") != std::string::npos);
  const LayerTimes a = layer_times(llama, scenario("flops", false), gpu, 1),
                   b = layer_times(llama, scenario("flops", true), gpu, 1);
  CHECK(a.fwd == b.fwd);
  CHECK(a.bwd == b.bwd);
  nlohmann::json bad = scenario_doc({{"efficiency", 0.5}});
  bad["training"]["compile"] = "yes";
  CHECK_THROWS_AS(parse_scenario(bad, "s.json"), InputError);
}

TEST_CASE("roofline: Megatron's optimizer passes over each parameter, timed by their bytes")
{
  const GpuSpec gpu = gpu_spec("A100-SXM4-80GB");
  const MemoryRules mem = memory_rules(Precision::Fp16, "adam");
  const double params = 1e9;
  const double adam = optimizer_seconds(params, mem, true, gpu, 0, kDefaultMemoryEfficiency);
  CHECK(optimizer_seconds(params, mem, true, gpu) == doctest::Approx(adam * kDefaultMemoryEfficiency / 0.85));
  // unscale (read + write 4 B), norm (read 4 B), master read for the half copy (4 B), zeroing (4 B)
  const double all = optimizer_seconds(params, mem, true, gpu, kMegatronStepPassBytes, kDefaultMemoryEfficiency);
  CHECK(all - adam == doctest::Approx(params * 20 / (gpu.memory_bandwidth * 0.73523)));
}
