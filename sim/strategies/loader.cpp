#include "sim/strategies/loader.hpp"

#include "sim/util/data_paths.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

namespace dtsim {

namespace {

/// The dataset kind a model is trained on by default: the kind whose file lists the model; else, for a
/// model with a vocabulary (an inline transformer family, a model file of a language model), token
/// ids: tokenized-text (an inline Llama 3 8B read synthetic input where the file's llama3-8b read
/// tokenized text: helper-59); else synthetic.
std::string default_dataset(const Model& model)
{
  for (const auto& kind : data_names("models/datasets")) {
    const std::string path = data_file("models/datasets", kind);
    const nlohmann::json doc = load_json_file(path);
    const JsonReader r(doc, path);
    if (auto models = r.find("models"))
      for (const auto& m : models->items())
        if (m.as_string() == model.name)
          return kind;
  }
  return model.arch.count("vocab") ? "tokenized-text" : "synthetic";
}

/// A non-negative quantity of at most `max`, else an error naming the value's file and pointer.
double at_most(const JsonReader& r, double max, const char* what)
{
  const double v = r.as_non_negative();
  if (v > max)
    r.fail(fmt::format("expected {} from 0 to {:g}, got {:g}", what, max, v));
  return v;
}

/// The node's CPUs as the host model takes them: the topology's host, its calibrated load curve
/// (apply_calibration) or the default one.
HostCpus host_cpus(const Topology::Host& host)
{
  HostCpus c;
  c.cores = host.cores;
  c.threads_per_core = host.threads_per_core;
  c.sockets = host.sockets;
  c.turbo_max_ghz = host.turbo_max_ghz;
  c.turbo_all_core_ghz = host.turbo_all_core_ghz;
  if (!host.load_curve.empty()) {
    c.curve.points = host.load_curve;
    c.curve.source = host.load_curve_source;
    c.curve_calibrated = true;
  } else {
    c.curve = default_load_curve();
  }
  return c;
}

/// The domain of cores the host model runs on, by training.loader.affinity (LoaderSpec::affinity).
void place(LoaderSpec& s, const Topology::Host& host, const std::optional<JsonReader>& affinity)
{
  const int sockets = std::max(1, host.sockets);
  const int per_socket = s.extras.processes_per_socket > 0 ? s.extras.processes_per_socket
                                                          : (s.processes_per_node + sockets - 1) / sockets;
  s.domain_processes = s.processes_per_node;
  s.domain_loading = s.extras.loading_per_node > 0 ? std::min(s.extras.loading_per_node, s.domain_processes) : s.domain_processes;
  s.memory_processes = s.processes_per_node;
  s.memory_bytes_per_s = host.memory_bytes_per_s_per_socket * sockets;
  if (!affinity)
    return;
  s.affinity = affinity->as_choice({"none", "socket", "socket_unique"});
  if (s.affinity == "none" || host.cores <= 0)
    return;
  const int socket_cores = host.cores / sockets;
  s.memory_processes = per_socket;
  s.memory_bytes_per_s = host.memory_bytes_per_s_per_socket;
  if (s.affinity == "socket") {
    s.cpus.cores = socket_cores;
    s.domain_processes = per_socket;
    s.domain_loading = s.extras.loading_per_socket > 0 ? std::min(s.extras.loading_per_socket, per_socket) : per_socket;
    return;
  }
  // socket_unique, balanced as gpu_affinity.py does: each process floor(socket cores / processes).
  if (socket_cores / per_socket < 1)
    affinity->fail(fmt::format("socket_unique gives each process its own cores: {} processes on a socket of {} cores "
                               "leave none (expected at most {} processes per socket, or \"socket\")",
                               per_socket, socket_cores, socket_cores));
  s.cpus.cores = socket_cores / per_socket;
  s.domain_processes = 1;
  s.domain_loading = 1;  // the busiest: a loading process's own cores
}

}  // namespace

DatasetCost parse_dataset_kind(const JsonReader& kind, double input_elems)
{
  if (!kind.is_object())
    kind.fail(fmt::format("expected a dataset kind object, got {}", describe_json(kind.json())));
  kind.reject_unknown({"description", "per_sample_ms", "input_bytes_per_sample", "input_bytes_per_sample_per_input_elem",
                       "host_memory_bytes_per_sample", "models", "sources"});
  if (auto d = kind.find("description"))
    (void)d->as_string();
  if (auto models = kind.find("models"))
    for (const auto& m : models->items())
      (void)m.as_string();
  DatasetCost c;
  c.per_sample_s = at_most(kind.at("per_sample_ms"), kMaxPerSampleMs, "milliseconds of CPU per sample") * 1e-3;
  if (auto m = kind.find("host_memory_bytes_per_sample"))
    c.host_memory_bytes_per_sample = at_most(*m, kMaxInputBytesPerSample, "bytes of host memory traffic per sample");
  const auto per_elem = kind.find("input_bytes_per_sample_per_input_elem");
  const auto bytes = kind.find("input_bytes_per_sample");
  if (per_elem && bytes)
    per_elem->fail("expected input_bytes_per_sample or input_bytes_per_sample_per_input_elem, not both");
  if (per_elem) {
    c.input_bytes_per_sample = at_most(*per_elem, kMaxInputBytesPerSample, "bytes per input element") * input_elems;
    if (c.input_bytes_per_sample > kMaxInputBytesPerSample)
      per_elem->fail(fmt::format("{:g} bytes per sample for the model's {:g} input elements, expected at most {:g}",
                                 c.input_bytes_per_sample, input_elems, kMaxInputBytesPerSample));
  } else {
    c.input_bytes_per_sample = at_most(kind.at("input_bytes_per_sample"), kMaxInputBytesPerSample, "bytes per sample");
  }
  return c;
}

LoaderSpec parse_loader(const Scenario& scenario, const Model& model, const Topology& topology, int processes_per_node,
                        const HostExtras& extras)
{
  LoaderSpec s;
  s.processes_per_node = std::max(1, processes_per_node);
  const auto given = scenario.reader().at("training").find("loader");
  if (given)
    given->reject_unknown({"dataset", "workers", "per_sample_ms", "input_bytes_per_sample", "affinity"});
  s.dataset = default_dataset(model);
  if (given && given->has("dataset")) {
    const auto r = given->at("dataset");
    s.dataset = r.as_choice(data_names("models/datasets"));
  }
  const std::string path = data_file("models/datasets", s.dataset);
  const nlohmann::json doc = load_json_file(path);
  const DatasetCost cost = parse_dataset_kind(JsonReader(doc, path), static_cast<double>(model.input_elems));
  s.per_sample_s = cost.per_sample_s;
  s.input_bytes_per_sample = cost.input_bytes_per_sample;
  s.host_memory_bytes_per_sample = cost.host_memory_bytes_per_sample;

  // The node's cores, shared by every thread on it (host_model.hpp), and the load curve: the
  // cluster's calibration (dtsim calibrate of host_costs.py's JSON), else the default.
  const Topology::Host& host = topology.host;
  s.extras = extras;
  s.cpus = host_cpus(host);
  place(s, host, given ? given->find("affinity") : std::nullopt);
  const double capacity = s.cpus.cores * (1.0 + kSmtThreadGain * (host.threads_per_core - 1));
  const double for_workers = s.cpus.cores > 0 ? std::max(0.0, capacity - s.domain_processes) : 0.0;
  if (given && given->has("workers")) {
    const auto w = given->at("workers");
    const auto v = w.as_int();
    if (v < 0 || v > 4096)
      w.fail(fmt::format("expected a number of DataLoader worker processes from 0 to 4096, got {}", v));
    s.workers = static_cast<int>(v);
  } else {
    // Not given: a process gets one worker per host core left to it (8 when the host is unknown,
    // a common choice in PyTorch's reference scripts).
    s.workers_assumed = true;
    s.workers = host.cores > 0 ? std::max(1, host.cores / s.processes_per_node - 1) : 8;
  }
  if (given && given->has("per_sample_ms")) {
    s.per_sample_s = at_most(given->at("per_sample_ms"), kMaxPerSampleMs, "milliseconds of CPU per sample") * 1e-3;
    s.per_sample_given = true;
  }
  if (given && given->has("input_bytes_per_sample"))
    s.input_bytes_per_sample = at_most(given->at("input_bytes_per_sample"), kMaxInputBytesPerSample, "bytes per sample");
  s.enabled = s.per_sample_s > 0 || s.input_bytes_per_sample > 0;
  const double demand = static_cast<double>(s.workers) * s.domain_processes;
  // The model gives each training process's main thread a core first: a host with no more than
  // that leaves its workers no CPU time at all (a batch would never be loaded).
  if (s.per_sample_s > 0 && demand > 0 && s.cpus.cores > 0 && !(for_workers > 0))
    throw InputError(scenario.file, "/cluster/host/cores",
                     fmt::format("{} cores ({:.1f} with SMT) leave no CPU time for the DataLoader workers of {} "
                                 "training processes (expected more cores, or training.loader.workers 0)",
                                 s.cpus.cores, capacity, s.domain_processes));
  return s.with_workers(s.workers);
}

std::string LoaderSpec::describe() const
{
  if (!enabled)
    return fmt::format("input: {} (no loading, no host-to-device copy)", dataset);
  std::string who = workers == 0 ? "loaded by the main process between steps (workers 0)"
                                 : fmt::format("{} DataLoader workers per process{}", workers,
                                               workers_assumed ? " (assumed: one per host core left; set training.loader.workers)" : "");
  std::string share = cpu_share < 1 ? fmt::format(", each worker gets {:.0f}% of a core ({} processes per node share the host)",
                                                  100 * cpu_share, processes_per_node)
                                    : "";
  if (affinity != "none")
    share += fmt::format(", bound ({}) to {} cores per {}", affinity, cpus.cores,
                         affinity == "socket" ? fmt::format("socket shared by {} processes", domain_processes) : "process");
  std::string load = load_ratio > 1.0005 ? fmt::format(", x{:.3f} with {:.0f}% of the cores busy", load_ratio, 100 * host.busy_fraction)
                                         : "";
  return fmt::format("input: {}, {} ms of CPU per sample{}{}, {}{}; {:.0f} KB per sample copied host -> GPU", dataset,
                     per_sample_s * 1e3, per_sample_given ? " (given)" : " (dataset default, one busy core)", load, who,
                     share, input_bytes_per_sample / 1e3);
}

int processes_per_node(const Topology& topology, const std::vector<int>& ranks)
{
  std::map<int, int> per_node;
  int most = 1;
  for (int r : ranks)
    most = std::max(most, ++per_node[topology.device(r).node]);
  return most;
}

bool spans_nodes(const Topology& topology, const std::vector<int>& ranks)
{
  for (int r : ranks)
    if (topology.device(r).node != topology.device(ranks.front()).node)
      return true;
  return false;
}

HostExtras host_extras(const Topology& topology, const std::vector<int>& ranks, double gpu_samples_per_s)
{
  HostExtras extras;
  extras.nccl_over_network = spans_nodes(topology, ranks);
  extras.processes_per_socket = processes_per_socket(topology, ranks);
  extras.gpu_samples_per_s = gpu_samples_per_s > 0 ? gpu_samples_per_s : 0.0;
  return extras;
}

int processes_per_socket(const Topology& topology, const std::vector<int>& ranks)
{
  std::map<int, int> per_cpu;
  int most = 0;
  for (int r : ranks)
    if (const int cpu = host_cpu_of(topology, r); cpu >= 0)
      most = std::max(most, ++per_cpu[cpu]);
  return most;
}

int host_cpu_of(const Topology& topology, int gpu)
{
  int best = -1;
  std::size_t best_hops = 0;
  // The CPUs of the GPU's node (in device order, as the ties fall), not every CPU of the machine:
  // a plan asks for each rank's, and 16,384 GPUs have 4,096 sockets.
  const int node = topology.device(gpu).node;
  for (int cpu : node >= 0 ? topology.devices_of_node(node) : topology.devices_of_kind(DeviceKind::Cpu)) {
    if (topology.device(cpu).kind != DeviceKind::Cpu || topology.device(cpu).node != node)
      continue;
    const std::size_t hops = topology.route(cpu, gpu).size();
    if (best < 0 || hops < best_hops) {
      best = cpu;
      best_hops = hops;
    }
  }
  return best;
}

int LoaderLane::load(TaskGraph& graph, double samples, const std::vector<int>& main_process_free)
{
  if (!spec_.enabled || !(spec_.per_sample_s > 0))
    return -1;
  std::vector<int> after;
  if (last_ >= 0)
    after.push_back(last_);
  if (spec_.workers == 0)
    after.insert(after.end(), main_process_free.begin(), main_process_free.end());
  last_ = graph.add_delay(device_, spec_.batch_seconds(samples),
                          fmt::format("load {:.0f} samples ({}, {})", samples,
                                      spec_.workers == 0 ? "main process" : fmt::format("{} workers", spec_.workers), who_),
                          TaskCategory::Load, std::move(after));
  return last_;
}

int add_input_copy(TaskGraph& graph, const Topology& topology, const LoaderSpec& spec, int gpu, double samples,
                   std::vector<int> after, const std::string& name)
{
  if (!spec.enabled || !(spec.input_bytes_per_sample > 0))
    return -1;
  const int cpu = host_cpu_of(topology, gpu);
  if (cpu < 0)
    return -1;
  return graph.add_transfer(cpu, gpu, samples * spec.input_bytes_per_sample, name, TaskCategory::HostToDevice, std::move(after));
}

}  // namespace dtsim
