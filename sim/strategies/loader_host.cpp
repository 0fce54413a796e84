// The loader's share of the host (host_model.hpp): the threads it and its training processes keep
// busy, at the rate the GPU takes their batches, and the report's verdict on the host.
#include "sim/strategies/loader.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim {

LoaderSpec LoaderSpec::with_workers(int w) const
{
  LoaderSpec s = *this;
  s.workers = w;
  const double procs = domain_processes;
  HostDemand d;
  const double loading = domain_loading;  // processes with a DataLoader
  d.workers = per_sample_s > 0 ? static_cast<double>(w) * loading : 0.0;
  d.main_threads = procs;  // busy while its GPU works: launching, or spinning in a CUDA synchronize
                           // (measured: the trainer of host_loadcurve.json took 3.98 CPU s of a 4 s
                           // window); less when it waits for batches (below)
  d.python_threads = extras.python_threads;
  d.nccl_proxies = extras.nccl_over_network ? procs : 0.0;
  // Workers are busy for the share of their output the GPU takes (a full prefetch queue blocks
  // them); the pin-memory thread copies each batch at kPinCopyBytesPerS. Both depend on the rate the
  // host gives, which depends on them: a few passes settle it.
  const double workers_all = d.workers;
  for (int pass = 0; pass < 4; ++pass) {
    s.host = host_load(cpus, d);
    s.cpu_share = s.host.share;
    s.load_ratio = s.host.load_ratio;
    if (!(per_sample_s > 0))
      break;
    const double produced = 1.0 / s.batch_seconds(1.0);  // samples/s of one process's loader
    const double used = extras.gpu_samples_per_s > 0 ? std::min(produced, extras.gpu_samples_per_s) : produced;
    d.workers = workers_all * used / produced;
    // The main thread is busy while the GPU works (launching, then spinning in a synchronize), and
    // blocked on the workers' result queue while it waits for a batch
    // (torch/utils/data/dataloader.py, _MultiProcessingDataLoaderIter._try_get_data: a queue get
    // with a timeout): busy for the GPU's share of the iteration. Without workers it loads itself.
    if (w > 0 && extras.gpu_samples_per_s > 0)
      d.main_threads = procs * std::min(1.0, used / extras.gpu_samples_per_s);
    d.pin_threads = input_bytes_per_sample > 0 ? loading * std::min(1.0, used * input_bytes_per_sample / kPinCopyBytesPerS)
                                               : 0.0;
  }
  s.demand = d;
  return s;
}

HostSummary LoaderSpec::host_summary(double samples, double gpu_seconds) const
{
  HostSummary h;
  h.modelled = enabled && per_sample_s > 0 && cpus.cores > 0;
  if (!h.modelled)
    return h;
  h.busy_threads = host.busy_threads;
  h.cores = cpus.cores;
  h.threads_per_core = cpus.threads_per_core;
  h.share = host.share;
  h.load_ratio = host.load_ratio;
  h.slowdown = host.slowdown();
  h.curve_source = cpus.curve.source;
  h.workers = workers;
  const double need = batch_seconds(samples);
  h.bound = gpu_seconds > 0 && need > gpu_seconds;
  if (!h.bound)
    return h;
  if (workers == 0)
    h.limit = "the main thread loads (workers 0)";
  else if (memory_seconds(samples) >= cpu_seconds(samples))
    h.limit = fmt::format("memory bandwidth ({:.0f} MB per sample x {:.0f} samples/s of {:.0f} GB/s)",
                          host_memory_bytes_per_sample / 1e6, memory_processes * samples / need, memory_bytes_per_s / 1e9);
  else
    h.limit = host.limit();
  if (h.limit.empty())
    h.limit = "too few workers (the host has cores to spare)";
  h.workers_to_keep_up = -1;
  const int most = std::max(1, cpus.cores * cpus.threads_per_core * 2);
  for (int w = std::max(1, workers + 1); w <= most; ++w)
    if (with_workers(w).batch_seconds(samples) <= gpu_seconds) {
      h.workers_to_keep_up = w;
      break;
    }
  return h;
}

std::string LoaderSpec::host_note(double samples, double gpu_seconds) const
{
  const HostSummary h = host_summary(samples, gpu_seconds);
  if (!h.modelled)
    return "";
  std::string out = fmt::format("host: {:.1f} busy threads on {} cores x {} threads ({:.1f} busy workers, {:.2f} main, {:.2f} "
                                "pin-memory, {:.2f} autograd, {:g} NCCL proxy); a worker's sample costs x{:.2f} its "
                                "one-core cost (share of a core {:.2f}, load curve x{:.3f}: {})",
                                host.busy_threads, cpus.cores, cpus.threads_per_core, demand.workers, demand.main_threads,
                                demand.pin_threads, demand.python_threads, demand.nccl_proxies, host.slowdown(),
                                host.share, host.load_ratio, cpus.curve.source);
  const double need = batch_seconds(samples);
  if (!h.bound)
    return out + fmt::format("; the loader keeps up ({:.4f} s per batch, the GPU's compute {:.4f} s)", need, gpu_seconds);
  out += fmt::format("; HOST-BOUND: the loader needs {:.4f} s per batch, the GPU's compute {:.4f} s; {}", need,
                     gpu_seconds, workers == 0 ? h.limit : "limit: " + h.limit);
  if (h.workers_to_keep_up > 0)
    return out + fmt::format("; {} workers per process would stop the GPUs waiting", h.workers_to_keep_up);
  return out + fmt::format("; no worker count up to {} keeps up on {} cores: the host is the bottleneck",
                           std::max(1, cpus.cores * cpus.threads_per_core * 2), cpus.cores);
}

}  // namespace dtsim
