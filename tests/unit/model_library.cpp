// The shipped models against published totals: torchvision's parameter counts and GMACs, the
// per-block ResNet-50 table of reference/nccl-and-pytorch-model.md §5, and closed forms for the
// transformers.
#include "sim/model/model.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

using namespace dtsim;

namespace {

std::int64_t block_params(const Model& m, const std::string& block)
{
  std::int64_t total = 0;
  for (const auto& layer : m.layers)
    if (layer.block == block)
      total += layer.params();
  return total;
}

double block_macs(const Model& m, const std::string& block)
{
  double total = 0;
  for (const auto& layer : m.layers)
    if (layer.block == block)
      total += layer.fwd_flops / 2;
  return total;
}

const Layer& layer_named(const Model& m, const std::string& name)
{
  for (const auto& layer : m.layers)
    if (layer.name == name)
      return layer;
  FAIL("no layer " << name);
  return m.layers.front();
}

}  // namespace

TEST_CASE("resnet50 is torchvision's ResNet-50 v1.5")
{
  const Model m = load_model("resnet50");
  CHECK(m.params() == 25'557'032);
  CHECK(m.param_tensor_count() == 161);
  CHECK(m.fwd_flops() == doctest::Approx(2.0 * 4'089'184'256).epsilon(1e-15));
  CHECK(m.fwd_flops() / 2 == 4'089'184'256.0);
  CHECK(m.input_elems == 3 * 224 * 224);
  // 53 BatchNorms: running_mean + running_var = the 53,120 BN gamma/beta elements.
  CHECK(m.buffer_elems() == 53'120);

  // Per-block parameters (§5 table).
  CHECK(layer_named(m, "conv1").params() == 9'408);
  CHECK(layer_named(m, "bn1").params() == 128);
  CHECK(block_params(m, "layer1.0") == 75'008);
  CHECK(block_params(m, "layer1.1") == 70'400);
  CHECK(block_params(m, "layer1.2") == 70'400);
  CHECK(block_params(m, "layer2.0") == 379'392);
  CHECK(block_params(m, "layer2.3") == 280'064);
  CHECK(block_params(m, "layer3.0") == 1'512'448);
  CHECK(block_params(m, "layer3.5") == 1'117'184);
  CHECK(block_params(m, "layer4.0") == 6'039'552);
  CHECK(block_params(m, "layer4.2") == 4'462'592);
  CHECK(layer_named(m, "fc").params() == 2'049'000);

  // Per-block forward MACs (§5 table, rounded to 0.1 M there).
  CHECK(layer_named(m, "conv1").fwd_flops / 2 == doctest::Approx(118.0e6).epsilon(0.001));
  CHECK(block_macs(m, "layer1.0") == doctest::Approx(231.2e6).epsilon(0.0005));
  CHECK(block_macs(m, "layer1.1") == doctest::Approx(218.4e6).epsilon(0.0005));
  CHECK(block_macs(m, "layer2.0") == doctest::Approx(372.5e6).epsilon(0.0005));
  CHECK(block_macs(m, "layer4.0") == doctest::Approx(372.5e6).epsilon(0.0005));
  CHECK(block_macs(m, "layer4.2") == doctest::Approx(218.4e6).epsilon(0.0005));
  CHECK(layer_named(m, "fc").fwd_flops == 2.0 * 2048 * 1000);

  // Tensor order is model.parameters() order: conv1.weight first, fc.weight, fc.bias last.
  const auto sizes = m.param_tensor_sizes();
  REQUIRE(sizes.size() == 161);
  CHECK(sizes.front() == 64 * 3 * 7 * 7);
  CHECK(sizes[sizes.size() - 2] == 2048 * 1000);
  CHECK(sizes.back() == 1000);
  // In a Bottleneck with downsample, the downsample conv comes after bn3.
  CHECK(layer_named(m, "layer1.0.downsample.0").param_tensors == std::vector<std::int64_t>{256 * 64});

  // Activations a pipeline cut would send.
  CHECK(layer_named(m, "maxpool").activation_elems == 64 * 56 * 56);
  CHECK(layer_named(m, "layer3.5.bn3").activation_elems == 1024 * 14 * 14);
  CHECK(layer_named(m, "avgpool").activation_elems == 2048);
}

TEST_CASE("resnet50 blocks: cuts only between residual blocks")
{
  const Model m = load_model("resnet50");
  std::size_t cuts = 0;
  for (std::size_t i = 0; i + 1 < m.layers.size(); ++i)
    cuts += m.cut_allowed_after(i) ? 1 : 0;
  // Units conv1, bn1, maxpool, 16 blocks, avgpool, fc: 21 units, 20 cuts.
  CHECK(cuts == 20);
  CHECK_FALSE(m.cut_allowed_after(m.layers.size() - 1));
}

TEST_CASE("other torchvision CNNs: parameter counts and GMACs as published")
{
  const Model r18 = load_model("resnet18");
  CHECK(r18.params() == 11'689'512);
  CHECK(r18.fwd_flops() / 2 / 1e9 == doctest::Approx(1.81).epsilon(0.005));
  const Model r101 = load_model("resnet101");
  CHECK(r101.params() == 44'549'160);
  CHECK(r101.param_tensor_count() == 314);
  CHECK(r101.fwd_flops() / 2 / 1e9 == doctest::Approx(7.80).epsilon(0.002));
  const Model vgg = load_model("vgg16");
  CHECK(vgg.params() == 138'357'544);
  CHECK(vgg.param_tensor_count() == 32);
  CHECK(vgg.fwd_flops() / 2 / 1e9 == doctest::Approx(15.47).epsilon(0.001));
  CHECK(layer_named(vgg, "classifier.0").param_tensors == std::vector<std::int64_t>{25088 * 4096, 4096});
  CHECK(vgg.buffer_elems() == 0);
}

TEST_CASE("the seeds' ToyModel and SimpleModel")
{
  const Model toy = load_model("toymodel");
  CHECK(toy.param_tensor_sizes() == std::vector<std::int64_t>{100, 10, 50, 5});
  CHECK(toy.params() == 165);
  CHECK(toy.fwd_flops() == 2.0 * (10 * 10 + 10 * 5));
  CHECK(toy.layers.back().activation_elems == 5);
  const Model simple = load_model("simplemodel");
  CHECK(simple.param_tensor_sizes() == std::vector<std::int64_t>{10, 1});
  CHECK(simple.layers.back().activation_elems == 1);
}

// GPT-2-style closed forms: params = L(12h^2 + 13h) + (V + P)h + 2h;
// forward FLOPs per sequence = 2s(12 L h^2 + hV) + 4 L s^2 h.
static void check_gpt(const std::string& name, double h, double L, double s, double V, std::int64_t published)
{
  CAPTURE(name);
  const Model m = load_model(name);
  const double params = L * (12 * h * h + 13 * h) + (V + s) * h + 2 * h;
  CHECK(static_cast<double>(m.params()) == params);
  if (published > 0)
    CHECK(m.params() == published);
  CHECK(m.fwd_flops() == 2 * s * (12 * L * h * h + h * V) + 4 * L * s * s * h);
  CHECK(m.arch.at("hidden") == h);
  CHECK(m.arch.at("seq_len") == s);
  CHECK(m.param_tensor_count() == static_cast<std::size_t>(2 + 12 * L + 2));
}

TEST_CASE("GPT family")
{
  check_gpt("gpt2", 768, 12, 1024, 50257, 124'439'808);
  check_gpt("gpt2-xl", 1600, 48, 1024, 50257, 1'557'611'200);
  check_gpt("gpt3-175b", 12288, 96, 2048, 50257, 174'604'259'328);
  const Model gpt2 = load_model("gpt2");
  CHECK(layer_named(gpt2, "lm_head").param_tensors.empty());  // tied to transformer.wte
  CHECK(layer_named(gpt2, "transformer.h.11.mlp.c_proj").activation_elems == 1024 * 768);
  CHECK(gpt2.cut_allowed_after(1));   // after the embeddings
  CHECK_FALSE(gpt2.cut_allowed_after(0));  // wte and wpe are summed
}

TEST_CASE("BERT-large for pre-training")
{
  const Model m = load_model("bert-large");
  CHECK(m.params() == 336'226'108);
  // BertModel (embeddings, 24 layers, pooler) alone: the published 335,141,888.
  std::int64_t bert_model = 0;
  for (const auto& layer : m.layers)
    if (layer.name.rfind("bert.", 0) == 0)
      bert_model += layer.params();
  CHECK(bert_model == 335'141'888);
  CHECK(block_params(m, "bert.encoder.layer.7") == 12'596'224);
  const double h = 1024, s = 512, V = 30522, L = 24;
  CHECK(m.fwd_flops() == 2 * s * (12 * L * h * h + h * h + h * V) + 4 * L * s * s * h + 2 * (h * h + 2 * h));
  const Model short_seq = load_model("bert-large-seq128");
  CHECK(short_seq.params() == m.params());
  CHECK(short_seq.arch.at("seq_len") == 128);
}

TEST_CASE("every shipped model loads, computes, and names itself")
{
  const auto names = model_names();
  CHECK(names.size() >= 11);
  for (const auto& name : names) {
    CAPTURE(name);
    const Model m = load_model(name);
    CHECK(m.name == name);
    CHECK(m.params() > 0);
    CHECK(m.fwd_flops() > 0);
    CHECK(m.input_elems > 0);
    CHECK_FALSE(m.source.empty());
    for (const auto& layer : m.layers)
      CHECK(layer.activation_elems > 0);
  }
}
