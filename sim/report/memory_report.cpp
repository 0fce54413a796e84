#include "sim/report/memory_report.hpp"

#include "sim/util/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace dtsim {

namespace {

/// A --set argument as a shell takes it: quoted where it holds JSON.
std::string shell_set(const std::string& set)
{
  return set.find_first_of("{}\"' []") == std::string::npos ? "--set " + set : "--set '" + set + "'";
}

/// The changes `dtsim run` planned (fit_alternatives.hpp): those that fit first, each with its busiest
/// GPU's device memory.
std::string planned_alternatives(const RunResult& r)
{
  std::string out = "  Changes planned with this scenario (each one alone; device memory of its busiest GPU):\n";
  std::vector<const FitAlternative*> shown;
  for (const bool fitting : {true, false})
    for (const auto& a : r.fit_alternatives)
      if (a.fits == fitting)
        shown.push_back(&a);
  for (const auto* a : shown) {
    std::string sets;
    for (const auto& set : a->sets)
      sets += (sets.empty() ? "" : " ") + shell_set(set);
    // A GPU that fits while the host cannot hold what is offloaded to it does not fit either.
    const char* verdict = a->fits ? "fits" : a->host_fits || a->device_bytes > r.gpu_memory_bytes ? "does not fit" : "host too small";
    out += fmt::format("    {:<14} {:>8.2f} GiB   {}\n", verdict, a->device_bytes / kGiB, sets);
  }
  if (!shown.front()->fits)
    out += "    none of them fits: more GPUs to shard over, more pipeline stages, or a GPU with more memory\n";
  return out;
}

/// What would make a GPU that does not fit fit, from what dominates its peak (where no change was
/// planned: `dtsim run` plans them, see planned_alternatives).
std::string suggestions(const GpuMemory& m, double capacity, bool full_recomputation, int gpus)
{
  std::string out;
  const double fixed = std::max(m.total(), m.device_used) - m.activations;
  if (m.activations_per_sample > 0 && capacity > fixed) {
    const double largest = std::floor((capacity - fixed) / m.activations_per_sample);
    if (largest >= 1)
      out += fmt::format("a micro batch of at most about {:.0f} samples; ", largest);
  }
  if (m.dominant == "activations") {
    // Full recomputation already keeps no more than each layer's input: nothing left to recompute.
    out += full_recomputation ? "more tensor-parallel ranks with sequence parallelism (activations / t) or pipeline stages"
                              : "activation recomputation (training.activation_checkpointing: selective or full); more "
                                "tensor-parallel ranks with sequence parallelism (activations / t) or pipeline stages";
    // The states alone could make room: they hold more than the excess.
    const double states = m.params + m.grads + m.optimizer;
    if (states > std::max(m.total(), m.device_used) - capacity)
      out += fmt::format("; or sharding more of the weights, gradients and optimizer state ({:.2f} GiB here: ZeRO-2 "
                         "or 3, FSDP, Megatron's distributed optimizer)",
                         states / kGiB);
  } else if (gpus <= 1) {
    // Nothing to shard over on one GPU (FSDP's CPU offload needs a shard group of more than one rank).
    out += "more GPUs to shard the optimizer state, gradients and weights over, or to split the model across";
  } else {
    out += "sharding the optimizer state, gradients and weights (ZeRO / FSDP, or Megatron's distributed optimizer); "
           "more tensor- or pipeline-parallel ranks (weights / t or / p)";
    // ZeRO-Offload moves the optimizer state and the gradient partition to the host (also where no
    // more GPUs are there to shard over).
    const double excess = std::max(m.total(), m.device_used) - capacity;
    if (m.optimizer + m.grads > excess)
      out += fmt::format("; or the optimizer on the host ({:.2f} GiB of optimizer state and gradients here: strategy "
                         "zero, stage 2 or 3, offload_optimizer {{\"device\": \"cpu\"}})",
                         (m.optimizer + m.grads) / kGiB);
    // FSDP's CPU offload moves the weights' shards there too.
    if (m.params + m.optimizer + m.grads > excess)
      out += fmt::format("; or FSDP's CPU offload, which keeps the weight shards as well on the host ({:.2f} GiB of weights, "
                         "optimizer state and gradients here: strategy fsdp, cpu_offload true)",
                         (m.params + m.optimizer + m.grads) / kGiB);
  }
  return out;
}

}  // namespace

std::string memory_verdict(const RunResult& r)
{
  const GpuMemoryRow* busiest = nullptr;
  for (const auto& row : r.memory)
    if (!busiest || row.memory.device_used > busiest->memory.device_used)
      busiest = &row;
  if (busiest && !busiest->fits)
    return fmt::format("{} {} needs {:.2f} GiB of its {:.2f} GiB",
                       busiest->devices.find("..") != std::string::npos ? "each of" : "the busiest GPU,", busiest->devices,
                       std::max(busiest->memory.total(), busiest->memory.device_used) / kGiB, r.gpu_memory_bytes / kGiB);
  return fmt::format("each node's host holds {:.2f} GiB of offloaded state against {:.2f} GiB", r.host_offload_bytes / kGiB,
                     r.host_memory_bytes / kGiB);
}

std::string memory_text(const RunResult& r)
{
  if (r.memory.empty())
    return "";
  std::string out = fmt::format("Memory per GPU at its peak (GiB; capacity {:.1f} GiB)\n", r.gpu_memory_bytes / kGiB);
  out += fmt::format("  {:<26} {:>8} {:>8} {:>9} {:>11} {:>7} {:>9} {:>8} {:>8} {:>8}  {}\n", "GPU", "weights", "grads",
                     "optimizer", "activations", "io", "workspace", "total", "reserved", "device", "peak at");
  for (const auto& row : r.memory) {
    const auto& m = row.memory;
    out += fmt::format("  {:<26} {:>8.2f} {:>8.2f} {:>9.2f} {:>11.2f} {:>7.2f} {:>9.2f} {:>8.2f} {:>8.2f} {:>8.2f}  {}{}\n",
                       row.devices, m.params / kGiB, m.grads / kGiB, m.optimizer / kGiB, m.activations / kGiB,
                       m.io / kGiB, m.workspace / kGiB, m.total() / kGiB, m.peak_reserved / kGiB, m.device_used / kGiB,
                       m.peak_at, row.fits ? "" : "  DOES NOT FIT");
  }
  out += "  total = peak allocated (torch.cuda.max_memory_allocated); reserved = the caching allocator's blocks; device "
         "= reserved + CUDA context, as nvidia-smi shows the process\n";
  std::set<std::pair<double, std::string>> told;  // GPUs that hold the same as one already told of
  for (const auto& row : r.memory) {
    if (row.fits || !told.insert({std::round(row.memory.device_used), row.memory.peak_at}).second)
      continue;
    const auto& m = row.memory;
    out += fmt::format("  {} does not fit: {:.2f} GiB used at the peak ({}) against {:.2f} GiB; {} dominate ({:.2f} "
                       "GiB).{}{}\n",
                       row.devices, std::max(m.total(), m.device_used) / kGiB, m.peak_at, r.gpu_memory_bytes / kGiB,
                       m.dominant, m.dominant == "activations" ? m.activations / kGiB
                                   : m.dominant == "weights"   ? m.params / kGiB
                                   : m.dominant == "gradients" ? m.grads / kGiB
                                   : m.dominant == "optimizer state" ? m.optimizer / kGiB
                                   : m.dominant == "workspace" ? m.workspace / kGiB
                                                               : m.io / kGiB,
                       r.fit_alternatives.empty() ? " Would fit: " : "",
                       r.fit_alternatives.empty() ? suggestions(m, r.gpu_memory_bytes, r.full_recomputation, r.gpus) : "");
  }
  if (!r.fit_alternatives.empty())
    out += planned_alternatives(r);
  if (r.host_offload_bytes > 0) {
    out += fmt::format("  host memory per node: {:.2f} GiB of offloaded state (its processes' shares of weights, gradients and "
                       "optimizer state)",
                       r.host_offload_bytes / kGiB);
    if (!(r.host_memory_bytes > 0))
      out += "; the cluster gives no host.memory_gib to hold it against\n";
    else if (r.host_memory_fits)
      out += fmt::format(" of {:.2f} GiB\n", r.host_memory_bytes / kGiB);
    else
      out += fmt::format(" against {:.2f} GiB  DOES NOT FIT: more GPUs (each node's processes hold a smaller share), a "
                         "smaller model or a host with more memory\n",
                         r.host_memory_bytes / kGiB);
  }
  return out;
}

std::string per_gpu_text(const RunResult& r)
{
  if (r.per_gpu.empty())
    return "";
  const auto label = [](const GpuUsage& u) {
    return u.stands_for > 1 ? fmt::format("{} (for {})", u.device, u.stands_for) : u.device;
  };
  const std::size_t shown = r.per_gpu.size() <= 16 ? r.per_gpu.size() : 8;
  std::size_t width = 12;
  for (std::size_t i = 0; i < shown; ++i)
    width = std::max(width, label(r.per_gpu[i]).size());
  std::string out = "Per GPU, one iteration\n";
  out += fmt::format("  {:<{}} {:>12} {:>12} {:>11} {:>11} {:>7}\n", "GPU", width, "sent MB", "received MB", "busy ms",
                     "idle ms", "idle %");
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& u = r.per_gpu[i];
    out += fmt::format("  {:<{}} {:>12.2f} {:>12.2f} {:>11.3f} {:>11.3f} {:>6.1f}%\n", label(u), width, u.bytes_sent / 1e6,
                       u.bytes_received / 1e6, u.busy_s * 1e3, u.idle_s * 1e3,
                       100 * u.idle_s / r.iteration_time_s);
  }
  if (shown < r.per_gpu.size())
    out += fmt::format("  ... ({} more GPUs)\n", r.per_gpu.size() - shown);
  if (!r.stages.empty()) {
    out += fmt::format("\nPer pipeline stage, one iteration (its slowest GPU; ms; each column outside the ones before it)\n");
    out += fmt::format("  {:>5} {:<12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "stage", "GPU", "forward",
                       "backward", "recompute", "optimizer", "TP comm", "PP sends", "DP comm", "waiting");
    const std::size_t stage_rows = r.stages.size() <= 16 ? r.stages.size() : 8;
    for (std::size_t k = 0; k < stage_rows; ++k) {
      const auto& s = r.stages[k];
      out += fmt::format("  {:>5} {:<12} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f}\n",
                         s.stage, s.device, s.forward_s * 1e3, s.backward_s * 1e3, s.recompute_s * 1e3,
                         s.optimizer_s * 1e3, s.tensor_parallel_s * 1e3, s.pipeline_s * 1e3, s.data_parallel_s * 1e3,
                         s.waiting_s * 1e3);
    }
    if (stage_rows < r.stages.size())
      out += fmt::format("  ... ({} more stages)\n", r.stages.size() - stage_rows);
  }
  if (r.pipeline_stages > 1 && r.virtual_stages > 1)
    out += fmt::format("  pipeline bubble: {:.1f}% of the iteration ({} stages of {} chunks, {} micro-batches; "
                       "ideal (p-1)/(v m+p-1) = {:.1f}%)\n",
                       100 * r.bubble_fraction, r.pipeline_stages, r.virtual_stages, r.microbatches,
                       100.0 * (r.pipeline_stages - 1) / (r.virtual_stages * r.microbatches + r.pipeline_stages - 1));
  else if (r.pipeline_stages > 1)
    out += fmt::format("  pipeline bubble: {:.1f}% of the iteration ({} stages, {} micro-batches; ideal "
                       "(p-1)/(m+p-1) = {:.1f}%)\n",
                       100 * r.bubble_fraction, r.pipeline_stages, r.microbatches,
                       100.0 * (r.pipeline_stages - 1) / (r.microbatches + r.pipeline_stages - 1));
  return out;
}

nlohmann::json memory_json(const RunResult& r)
{
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.memory) {
    const auto& m = row.memory;
    rows.push_back({{"gpus", row.devices}, {"weights_bytes", m.params}, {"grads_bytes", m.grads},
                    {"optimizer_bytes", m.optimizer}, {"activations_bytes", m.activations}, {"io_bytes", m.io},
                    {"workspace_bytes", m.workspace}, {"total_bytes", m.total()},
                    {"peak_allocated_bytes", m.total()}, {"peak_reserved_bytes", m.peak_reserved},
                    {"device_used_bytes", m.device_used}, {"peak_at", m.peak_at}, {"dominant", m.dominant},
                    {"fits", row.fits}});
  }
  nlohmann::json out = {{"capacity_bytes", r.gpu_memory_bytes}, {"fits", r.memory_fits}, {"per_gpu", rows}};
  if (!r.fit_alternatives.empty()) {
    nlohmann::json alternatives = nlohmann::json::array();
    for (const auto& a : r.fit_alternatives)
      alternatives.push_back(
          {{"set", a.sets}, {"device_used_bytes", a.device_bytes}, {"fits", a.fits}, {"host_fits", a.host_fits}});
    out["alternatives"] = alternatives;
  }
  if (r.host_offload_bytes > 0)
    // Without the host's memory_gib neither a capacity nor a verdict: null, not 0 and true.
    out["host"] = {{"offloaded_bytes_per_node", r.host_offload_bytes},
                   {"capacity_bytes", r.host_memory_bytes > 0 ? nlohmann::json(r.host_memory_bytes) : nlohmann::json()},
                   {"fits", r.host_memory_bytes > 0 ? nlohmann::json(r.host_memory_fits) : nlohmann::json()}};
  return out;
}

nlohmann::json stages_json(const RunResult& r)
{
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& s : r.stages)
    rows.push_back({{"stage", s.stage}, {"gpu", s.device}, {"forward_s", s.forward_s}, {"backward_s", s.backward_s},
                    {"recompute_s", s.recompute_s}, {"optimizer_s", s.optimizer_s},
                    {"tensor_parallel_s", s.tensor_parallel_s}, {"pipeline_s", s.pipeline_s},
                    {"data_parallel_s", s.data_parallel_s}, {"waiting_s", s.waiting_s}});
  return rows;
}

nlohmann::json per_gpu_json(const RunResult& r)
{
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& u : r.per_gpu)
    rows.push_back({{"gpu", u.device}, {"bytes_sent", u.bytes_sent}, {"bytes_received", u.bytes_received},
                    {"busy_s", u.busy_s}, {"idle_s", u.idle_s}, {"stands_for", u.stands_for}});
  return rows;
}

DeviceMemoryFigures device_memory_of(const nlohmann::json& report)
{
  DeviceMemoryFigures out;
  if (!report.is_object())
    return out;
  const auto mem = report.find("memory");
  if (mem == report.end() || !mem->is_object())
    return out;
  out.known = true;
  out.fits = mem->value("fits", true);
  if (const auto host = mem->find("host"); host != mem->end() && host->is_object())
    out.host_weighed = host->value("fits", nlohmann::json()).is_boolean();
  if (const auto gpus = mem->find("per_gpu"); gpus != mem->end() && gpus->is_array())
    for (const auto& g : *gpus)
      if (g.is_object())
        out.busiest_bytes = std::max(out.busiest_bytes, g.value("device_used_bytes", g.value("total_bytes", 0.0)));
  return out;
}

}  // namespace dtsim
