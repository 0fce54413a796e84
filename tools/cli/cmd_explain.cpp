// dtsim explain dp|ddp|pipeline|hybrid|fsdp|zero --gpus N [--model NAME] [--cluster NAME|FILE] [--nodes N] [--batch B]
//               [--precision P] [--microbatches M] [--tp T] [--pp P] [--throughput SAMPLES_PER_S]
// Simulates one warm-up and one measured iteration of the strategy and prints the step table.
#include "tools/cli/command.hpp"
#include "sim/topology/topology_builder.hpp"

#include "sim/explain/step_format.hpp"
#include "sim/explain/step_table.hpp"
#include "sim/predict/predict.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/util/number_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::cli {

namespace {
struct ExplainArgs {
  std::string strategy;
  int gpus = 0;
  std::string model = "resnet50";
  bool model_given = false;  ///< --model on the command line (else each strategy's own default)
  std::string cluster = "dgx1-v100";
  std::optional<int> nodes;  ///< unset: as many as the GPUs need
  int batch = 32;
  std::string precision = "fp32";
  int microbatches = 1;
  int tensor_parallel = 2;   ///< hybrid
  int pipeline_stages = 2;   ///< hybrid
  int zero_stage = 3;        ///< zero
  double throughput = 0;
  bool json = false;
};

nlohmann::json rows_json(const std::vector<StepRow>& rows)
{
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows)
    out.push_back({{"category", to_string(r.category)}, {"group", r.group}, {"who", r.who}, {"bytes", r.bytes},
                   {"transfers", r.transfers}, {"links", r.links}, {"inter_gpu", r.inter_gpu}, {"start_s", r.start},
                   {"duration_s", r.duration}});
  return out;
}

nlohmann::json explain_scenario(const ExplainArgs& a)
{
  nlohmann::json compute = a.throughput > 0 ? nlohmann::json{{"single_gpu_throughput", a.throughput}}
                                            : nlohmann::json{{"efficiency", 0.5}};
  nlohmann::json strategy = {{"kind", a.strategy}};
  if (a.strategy == "pipeline" || a.strategy == "hybrid")
    strategy["microbatches"] = a.microbatches;
  if (a.strategy == "hybrid") {
    strategy["tensor_parallel"] = a.tensor_parallel;
    strategy["pipeline_stages"] = a.pipeline_stages;
    strategy["schedule"] = "1f1b";
  }
  if (a.strategy == "zero")
    strategy["stage"] = a.zero_stage;
  // FSDP's step table shows one unit: GPT-2's dimensions with a single transformer layer, so that
  // the root (embeddings, final norm, head) and one wrapped unit are all there is.
  const nlohmann::json model = a.strategy == "fsdp" && !a.model_given
                                   ? nlohmann::json{{"family", "gpt"}, {"name", "gpt2-1-layer"}, {"hidden", 768}, {"layers", 1},
                                                    {"heads", 12}, {"seq_len", 1024}, {"vocab", 50257}, {"tied_embeddings", true}}
                                   : nlohmann::json(a.model);
  return {{"name", "explain " + a.strategy},
          {"cluster", a.nodes.value_or(1) > 1 ? nlohmann::json{{"base", a.cluster}, {"nodes", *a.nodes}}
                                            : nlohmann::json(a.cluster)},
          {"model", model},
          {"training",
           {{"dataset_samples", 1281167}, {"batch_per_gpu", a.batch}, {"epochs", 1}, {"precision", a.precision},
            {"compute", compute}}},
          {"strategy", strategy},
          {"gpus", a.gpus},
          {"simulation", {{"iterations", 2}, {"warmup", 1}}}};
}
}  // namespace

void add_explain_command(CLI::App& app, Action& action)
{
  auto a = std::make_shared<ExplainArgs>();
  auto* cmd = app.add_subcommand("explain", "Step table of one training iteration: who sends what to whom, over "
                                            "which link, for how long (☆ on every GPU-to-GPU transfer)");
  cmd->add_option("strategy", a->strategy, "dp | ddp | pipeline | hybrid | fsdp | zero")
      ->required()
      ->check(CLI::IsMember({"dp", "ddp", "pipeline", "hybrid", "fsdp", "zero"}));
  cmd->add_option("--gpus", a->gpus, "Number of GPUs")->required()->check(CLI::Range(1, 4096));
  auto* model = cmd->add_option("--model", a->model,
                                "Model name (models/) or file (default resnet50; gpt2 for hybrid and zero; for fsdp GPT-2 "
                                "with one transformer layer: the root and one unit)");
  cmd->add_option("--cluster", a->cluster, "Topology preset or file (default dgx1-v100)");
  cmd->add_option("--nodes", a->nodes, "Nodes of the cluster (default: as many as --gpus needs)")->check(CLI::Range(1, 1024));
  cmd->add_option("--batch", a->batch, "Batch per GPU (per pipeline for pipeline; default 32)")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--precision", a->precision, "fp32 | tf32 | amp | fp16 | bf16 (default fp32)");
  auto* microbatches = cmd->add_option("--microbatches", a->microbatches, "Pipeline micro-batches (default 1: the naive split)")
                           ->check(CLI::Range(1, 1024));
  auto* tp = cmd->add_option("--tp", a->tensor_parallel, "hybrid: tensor-parallel GPUs per stage (default 2)")->check(CLI::Range(1, 4096));
  auto* pp = cmd->add_option("--pp", a->pipeline_stages, "hybrid: pipeline stages (default 2)")->check(CLI::Range(1, 4096));
  auto* stage = cmd->add_option("--stage", a->zero_stage, "zero: ZeRO stage 1, 2 or 3 (default 3)")->check(CLI::Range(1, 3));
  cmd->add_option("--throughput", a->throughput,
                  "Measured single-GPU samples/s at this batch (default: model FLOPs at 50% of the GPU's peak)")
      ->check(CLI::Validator(
          [](std::string& text) {
            const auto v = parse_double(text);
            return v && *v > 0 ? std::string() : "expected a finite number of samples/s > 0, got " + text;
          },
          "SAMPLES_PER_S"));
  cmd->add_flag("--json", a->json, "Print the step table as JSON");
  cmd->callback([&action, a, model, microbatches, tp, pp, stage] {
    // An option of another strategy would be ignored: refused, naming the strategies it applies to.
    const std::pair<CLI::Option*, std::vector<std::string>> scoped[] = {
        {microbatches, {"pipeline", "hybrid"}}, {tp, {"hybrid"}}, {pp, {"hybrid"}}, {stage, {"zero"}}};
    for (const auto& [option, strategies] : scoped)
      if (option->count() > 0 && std::find(strategies.begin(), strategies.end(), a->strategy) == strategies.end())
        throw CLI::ValidationError(option->get_name(), fmt::format("applies to {} only, not to {}", fmt::join(strategies, " and "),
                                                                   a->strategy));
    a->model_given = model->count() > 0;
    if (a->strategy == "hybrid" && model->count() == 0)
      a->model = "gpt2";  // tensor parallelism splits transformer layers
    if (a->strategy == "zero" && model->count() == 0)
      a->model = "gpt2";  // stage 3 fetches module by module: a transformer's linears
    action = [a] {
      ExplainArgs args = *a;
      if (!args.nodes) {  // --gpus 16 on 8-GPU nodes: 2 nodes
        const int per_node = std::max(1, load_topology(args.cluster, std::nullopt, "--cluster").gpus_per_node);
        args.nodes = (args.gpus + per_node - 1) / per_node;
      }
      const Scenario s = parse_scenario(explain_scenario(args), "explain");
      const Prediction p = predict(s);
      const StepTable table = build_step_table(p.topology, p.plan, p.spans, 1);
      if (a->json) {
        nlohmann::json per_gpu = nlohmann::json::array();
        for (const auto& u : table.per_gpu)
          per_gpu.push_back({{"device", u.device}, {"bytes_sent", u.bytes_sent}, {"bytes_received", u.bytes_received},
                             {"busy_s", u.busy_s}, {"idle_s", u.idle_s}});
        fmt::print("{}\n", nlohmann::json{{"strategy", a->strategy}, {"model", p.result.model}, {"topology", p.topology.name},
                                          {"gpu", p.topology.gpu.name}, {"gpus", a->gpus}, {"batch_per_gpu", a->batch},
                                          {"precision", a->precision}, {"iteration_s", table.iteration_s},
                                          {"once", rows_json(table.once)}, {"steps", rows_json(table.steps)},
                                          {"inter_gpu_steps", table.inter_gpu_steps},
                                          {"inter_gpu_transfers", table.inter_gpu_transfers},
                                          {"folded_from_gpus", p.plan.folded_from_gpus}, {"per_gpu", per_gpu}}
                                .dump(2));
        return 0;
      }
      ExplainHeader h{a->strategy, p.result.model, p.topology.name, p.topology.gpu.name, a->gpus,
                      static_cast<double>(a->batch), a->precision, a->strategy == "zero" ? a->zero_stage : 0};
      fmt::print("{}", format_step_table(h, table, p.plan));
      // The ring's closed form where the AllReduces ran GPU to GPU (☆ rows); on an NVSwitch with NVLink
      // SHARP, NCCL's NVLS runs them through the switch (no ☆), which the ring's formula does not describe.
      const auto any_allreduce = [&](bool starred) {
        return std::any_of(table.steps.begin(), table.steps.end(), [&](const StepRow& r) {
          return r.category == TaskCategory::AllReduce && r.bytes > 0 && r.inter_gpu == starred;
        });
      };
      const bool through_switch = any_allreduce(false), as_rings = any_allreduce(true) || !through_switch;
      if (a->strategy == "ddp" && a->gpus > 1 && as_rings)
        fmt::print("Ring AllReduce{}: each GPU sends (N-1)/N of its {:.2f} MB gradient twice (reduce-scatter, then "
                   "all-gather) = {:.2f} MB payload per GPU, N = {}\n",
                   through_switch ? " (the ☆ rows)" : "", p.result.gradient_bytes / 1e6,
                   2.0 * (a->gpus - 1) / a->gpus * p.result.gradient_bytes / 1e6, a->gpus);
      if (a->strategy == "ddp" && a->gpus > 1 && through_switch)
        fmt::print("AllReduce through the NVSwitch (NCCL's NVLS, NVLink SHARP: the switch sums what a node's GPUs send "
                   "and multicasts the result; NVLSTree adds a tree between nodes; no GPU-to-GPU transfer inside the "
                   "node, no ☆ on those rows): each GPU's {:.2f} MB gradient goes to the switch and the sum comes back, "
                   "N = {}\n",
                   p.result.gradient_bytes / 1e6, a->gpus);
      if (a->strategy == "dp" && a->gpus > 1)
        fmt::print("GPU0 is the hub: every input chunk, replica and output leaves or reaches GPU0, and the optimizer "
                   "runs there alone\n");
      return 0;
    };
  });
}

}  // namespace dtsim::cli
