#include "sim/explain/step_format.hpp"

#include "sim/util/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace dtsim {

std::string step_label(const StepRow& row, bool once)
{
  if (once && row.category == TaskCategory::Broadcast)
    return "broadcast parameters+buffers (once)";
  if (row.category == TaskCategory::Broadcast)
    return "broadcast BatchNorm buffers";
  static const std::map<TaskCategory, std::string> words = {
      {TaskCategory::Load, "load batch on the host (DataLoader)"},
      {TaskCategory::HostToDevice, "copy input batch host -> GPU"},
      {TaskCategory::Offload, "copy gradients to the host / parameters back (ZeRO-Offload)"},
      {TaskCategory::Scatter, "scatter input batch chunks"},
      {TaskCategory::Replicate, "replicate parameters+buffers"},
      {TaskCategory::Launch, "launch forward kernels (Python, GIL)"},
      {TaskCategory::Forward, "forward"},
      {TaskCategory::Gather, "gather outputs for the loss"},
      {TaskCategory::Loss, "loss"},
      {TaskCategory::GradScatter, "scatter loss gradient"},
      {TaskCategory::Backward, "backward"},
      {TaskCategory::Reduce, "reduce_add gradients"},
      {TaskCategory::Optimizer, "optimizer step"},
      {TaskCategory::Broadcast, "broadcast"},
      {TaskCategory::AllReduce, "AllReduce gradients"},
      {TaskCategory::Activation, "send activations"},
      {TaskCategory::ActivationGrad, "send activation gradients"},
      {TaskCategory::TensorParallel, "tensor-parallel AllReduce"},
      {TaskCategory::Recompute, "recompute forward"},
      {TaskCategory::AllGather, "AllGather parameters"},
      {TaskCategory::AllGatherBackward, "AllGather parameters again (backward)"},
      {TaskCategory::ReduceScatter, "ReduceScatter gradients"},
      {TaskCategory::FsdpCopyIn, "copy or cast the shard in"},
      {TaskCategory::FsdpCopy, "copy gathered parameters out (FSDP2)"},
      {TaskCategory::FsdpCopyBackward, "copy them out again (FSDP2, backward)"},
      {TaskCategory::FsdpGradCopy, "copy gradients to reduce dtype (FSDP2)"},
      {TaskCategory::FsdpGradPass, "cast and divide gradients (FSDP1)"},
      {TaskCategory::BucketCopy, "copy gradients into buckets (ZeRO)"},
      {TaskCategory::EmbeddingGrad, "AllReduce tied embedding gradients"},
  };
  const auto it = words.find(row.category);
  std::string label = it != words.end() ? it->second : to_string(row.category);
  if (row.group >= 0) {
    const bool micro = row.category == TaskCategory::Forward || row.category == TaskCategory::Backward ||
                       row.category == TaskCategory::Activation || row.category == TaskCategory::ActivationGrad ||
                       row.category == TaskCategory::TensorParallel || row.category == TaskCategory::Recompute;
    label += fmt::format(fmt::runtime(micro ? " mb {}" : " bucket {}"), row.group);
  }
  return label;
}

namespace {

std::string rows_text(const std::vector<StepRow>& rows, int& number, bool once)
{
  std::string out;
  for (const auto& r : rows) {
    ++number;
    const std::string bytes = r.transfers > 0 ? fmt::format("{:.2f}", r.bytes / 1e6) : "";
    out += fmt::format("{:>3} {} {:<38} {:<22} {:>10} {:<12} {:>9.3f} {:>9.3f}\n", number, r.inter_gpu ? "☆" : " ",
                       step_label(r, once), r.who, bytes, r.links, r.start * 1e3, r.duration * 1e3);
  }
  return out;
}

}  // namespace

std::string format_step_table(const ExplainHeader& h, const StepTable& t, const Plan& plan)
{
  static const std::map<std::string, std::string> titles = {
      {"dp", "nn.DataParallel: one process, GPU0 is the hub"},
      {"ddp", "DistributedDataParallel: one process per GPU"},
      {"pipeline", "model parallel: layers split across GPUs"},
      {"hybrid", "Megatron-LM: tensor x pipeline x data parallel"},
      {"fsdp", "PyTorch FSDP, full_shard: each unit's parameters gathered before its forward and backward, "
               "its gradients reduce-scattered"},
  };
  static const char* const zero_stages[] = {"optimizer states sharded", "optimizer states and gradients sharded",
                                            "optimizer states, gradients and parameters sharded"};
  std::string out;
  const auto title = titles.find(h.strategy);
  if (h.strategy == "zero" && h.zero_stage >= 1 && h.zero_stage <= 3)
    out += fmt::format("dtsim explain zero: DeepSpeed ZeRO stage {}, {}\n", h.zero_stage,
                       zero_stages[static_cast<std::size_t>(h.zero_stage - 1)]);
  else
    out += fmt::format("dtsim explain {}: {}\n", h.strategy, title != titles.end() ? title->second : h.strategy);
  out += fmt::format("{} on {} x {} ({}), batch {} per {}, {}\n", h.model, h.gpus, h.gpu, h.cluster, h.batch_per_gpu,
                     h.strategy == "pipeline" ? "pipeline" : h.strategy == "hybrid" ? "replica" : "GPU", h.precision);
  out += "☆ = data sent from one GPU to another; bytes are what crosses the links (payload + protocol overhead)\n";
  if (plan.folded_from_gpus > 0)
    out += fmt::format("ranks folded (simulation.ranks \"auto\" folds large runs): each row is one representative GPU of the "
                       "{}; its collectives run as their simulated times, without the transfers, bytes and links (fewer GPUs "
                       "list them)\n",
                       plan.folded_from_gpus);
  out += "\n";
  const std::string head = fmt::format("{:>3}   {:<38} {:<22} {:>10} {:<12} {:>9} {:>9}\n", "#", "step", "who",
                                       "MB", "links", "start ms", "time ms");
  int number = 0;
  if (!t.once.empty()) {
    out += "Once, before training\n" + head + rows_text(t.once, number, true) + "\n";
    number = 0;
  }
  out += fmt::format("One training iteration (steady state): {:.3f} ms, from the end of the previous one\n",
                     t.iteration_s * 1e3);
  out += head + rows_text(t.steps, number, false);
  if (std::any_of(t.steps.begin(), t.steps.end(), [](const StepRow& r) { return r.start < 0; }))
    out += "(a negative start: the step began during the previous iteration, e.g. the DataLoader loading ahead)\n";
  out += "\nPer GPU in this iteration\n";
  out += fmt::format("  {:<10} {:>10} {:>12} {:>10} {:>10}\n", "GPU", "sent MB", "received MB", "busy ms", "idle ms");
  for (const auto& u : t.per_gpu)
    out += fmt::format("  {:<10} {:>10.2f} {:>12.2f} {:>10.3f} {:>10.3f}\n", u.device, u.bytes_sent / 1e6,
                       u.bytes_received / 1e6, u.busy_s * 1e3, u.idle_s * 1e3);
  if (plan.folded_from_gpus > 0)
    out += "\nPer parameter update: the GPU-to-GPU transfers are not listed (ranks folded)\n";
  else
    out += fmt::format("\nPer parameter update: {} steps move data between GPUs (☆), {} GPU-to-GPU transfers\n",
                       t.inter_gpu_steps, t.inter_gpu_transfers);
  if (!plan.comm_per_iteration.empty()) {
    out += "Payload per iteration (the tensors one group's calls are made on, summed over its calls):";
    for (const auto& c : plan.comm_per_iteration)
      out += fmt::format("\n  {:<14} {:<40} {:>10.2f} MB{}{}", c.op, c.label, c.bytes / 1e6,
                         c.calls > 1 ? fmt::format(" in {} calls", c.calls) : "",
                         c.groups > 1 ? fmt::format(", x {} groups", c.groups) : "");
    out += "\n";
  }
  return out;
}

}  // namespace dtsim
