#include "sim/report/json_report.hpp"

#include "sim/report/memory_report.hpp"

#include <algorithm>

namespace dtsim {

namespace {

/// The host's cores under the loader (issue 32); null when no host is modelled.
nlohmann::json host_json(const HostSummary& h)
{
  if (!h.modelled)
    return nullptr;
  return {{"busy_threads", h.busy_threads},
          {"cores", h.cores},
          {"threads_per_core", h.threads_per_core},
          {"share_of_core", h.share},
          {"load_ratio", h.load_ratio},
          {"worker_slowdown", h.slowdown},
          {"load_curve", h.curve_source},
          {"bound", h.bound},
          {"limit", h.limit},
          {"workers", h.workers},
          {"workers_to_keep_up", h.workers_to_keep_up}};
}

}  // namespace

nlohmann::json json_report(const RunResult& r)
{
  nlohmann::json comm = nlohmann::json::array();
  for (const auto& c : r.comm_per_iteration)
    comm.push_back({{"label", c.label}, {"op", c.op}, {"bytes", c.bytes}, {"calls", c.calls}, {"groups", c.groups}});
  nlohmann::json critical = nlohmann::json::array();
  for (const auto& p : r.critical_path)
    critical.push_back({{"category", to_string(p.category)}, {"seconds", p.seconds}});
  nlohmann::json overlap = nlohmann::json::array();
  for (const auto& c : r.comm_overlap)
    overlap.push_back({{"category", to_string(c.category)}, {"in_flight_s", c.in_flight_s}, {"exposed_s", c.exposed_s}});
  nlohmann::json out = {
      {"scenario", r.scenario},
      {"strategy", r.strategy},
      {"model", r.model},
      {"topology", r.topology},
      {"gpu", r.gpu},
      {"gpus", r.gpus},
      {"nodes_used", r.nodes_used},
      {"params", r.params},
      {"gradient_bytes", r.gradient_bytes},
      {"compute_source", r.compute_source},
      {"comm_per_iteration", comm},
      {"simulated_iterations", r.simulated_iterations},
      {"warmup_iterations", r.warmup_iterations},
      {"iteration_spread", r.iteration_spread},
      {"setup_time_s", r.setup_time_s},
      {"iteration_time_s", r.iteration_time_s},
      {"compute_time_s", r.compute_time_s},
      {"nccl_slowdown_s", r.nccl_slowdown_s},
      {"comm_time_s", r.comm_time_s},
      {"straggler_wait_s", r.straggler_wait_s},
      {"exposed_comm_time_s", r.exposed_comm_time_s},
      {"pipeline_bubble_s", r.pipeline_stages > 1 ? nlohmann::json(r.pipeline_bubble_s) : nlohmann::json()},
      {"host_step_s", r.host_step_s},
      {"input_time_s", r.input_time_s},
      {"input_wait_s", r.input_wait_s},
      {"input_bound", r.input_bound},
      {"host", host_json(r.host)},
      {"critical_path", critical},
      {"samples_per_iteration", r.samples_per_iteration},
      {"micro_batch", r.micro_batch},
      {"global_batch", r.global_batch},
      {"gradient_accumulation", r.gradient_accumulation},
      {"data_parallel", r.data_parallel},
      {"activation_checkpointing", r.activation_checkpointing},
      {"activation_checkpointing_every", r.activation_checkpointing_every},
      {"throughput_samples_per_s", r.throughput_samples_per_s},
      {"single_gpu_iteration_time_s", r.single_gpu_iteration_s},
      {"single_gpu_throughput_samples_per_s", r.single_gpu_throughput},
      {"speedup_vs_1gpu", r.speedup_vs_1gpu},
      {"scaling_efficiency", r.scaling_efficiency},
      {"iterations_per_epoch", r.iterations_per_epoch},
      {"epoch_time_s", r.epoch_time_s},
      {"total_time_s", r.total_time_s},
      {"total_time_days", r.total_time_days},
      {"single_gpu_total_days", r.single_gpu_total_days},
      {"single_gpu_memory_bytes", r.single_gpu_memory_bytes},
      {"single_gpu_fits", r.single_gpu_fits},
      {"ideal_linear_total_days", r.ideal_linear_total_days},
      {"notes", r.notes},
      {"per_gpu", per_gpu_json(r)},
      {"stages", stages_json(r)},
      {"memory", memory_json(r)},
      {"pipeline_bubble_fraction", r.pipeline_stages > 1 ? nlohmann::json(r.bubble_fraction) : nlohmann::json()},
  };
  if (r.reference.single_gpu_throughput > 0) {
    const auto& ref = r.reference;
    out["reference_compute"] = {{"single_gpu_throughput", ref.single_gpu_throughput},
                                {"source", ref.source},
                                {"throughput_samples_per_s", ref.throughput},
                                {"iteration_time_s", ref.iteration_time_s},
                                {"scaling_efficiency", ref.scaling_efficiency},
                                {"total_time_days", ref.total_days},
                                {"single_gpu_total_days", ref.single_gpu_total_days}};
  }
  if (!overlap.empty())
    out["comm_overlap"] = overlap;  // fsdp and zero (results.hpp)
  return out;
}

std::optional<double> pipeline_bubble_of(const nlohmann::json& report)
{
  const auto b = report.find("pipeline_bubble_s");
  if (b == report.end() || !b->is_number())
    return std::nullopt;
  return b->get<double>();
}

bool any_pipeline_bubble(const std::vector<nlohmann::json>& reports)
{
  return std::any_of(reports.begin(), reports.end(), [](const auto& r) { return pipeline_bubble_of(r).has_value(); });
}

}  // namespace dtsim
