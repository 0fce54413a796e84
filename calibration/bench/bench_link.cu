// dtsim-bench-link: host<->device bandwidth (pinned and pageable), device-local copy bandwidth, and
// the GPU-to-GPU bandwidth (unidirectional, bidirectional; peer access enabled and disabled) and
// latency matrices, as p2pBandwidthLatencyTest measures them. Prints p2pBandwidthLatencyTest-style
// text (read back by `dtsim calibrate`) and, with --json, the same plus the machine and spreads.
#include "calibration/bandwidth_report.hpp"
#include "calibration/bench/bench_common.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>

namespace dtsim::bench {
namespace {

using calibration::BandwidthMeasurements;
using calibration::Matrix;

const char* kHelp = R"(dtsim-bench-link: link bandwidths and latencies of this machine's GPUs.

usage: dtsim-bench-link [--size BYTES] [--repeats N] [--warmup N] [--latency-iters N]
                        [--no-p2p] [--json FILE] [--help]

  --size BYTES        bytes per bandwidth copy (default 64M; K/M/G suffixes)
  --repeats N         timed repetitions per cell; the median is reported (default 20)
  --warmup N          untimed repetitions first (default 3)
  --latency-iters N   back-to-back 4-byte copies per latency sample (default 100)
  --no-p2p            host<->device only
  --json FILE         also write JSON (machine description, medians, min/max spreads)

Measures, per GPU: host-to-device and device-to-host with pinned (cudaMallocHost) and pageable
(malloc) host memory, and a device-local copy (counted read + write, as bandwidthTest does). With
two or more GPUs: cudaMemcpyPeerAsync GPU->GPU bandwidth with peer access disabled (staged through
host memory) and enabled (direct NVLink/PCIe), both directions at once, and the latency of a 4-byte
copy. With one GPU the peer matrices cannot be measured; the program says so.
Output: p2pBandwidthLatencyTest-style text on stdout (give it to `dtsim calibrate`).
)";

struct Timer {
  cudaEvent_t start{}, stop{};
  Timer() { DTSIM_CUDA(cudaEventCreate(&start)); DTSIM_CUDA(cudaEventCreate(&stop)); }
  ~Timer() { cudaEventDestroy(start); cudaEventDestroy(stop); }
};

struct Settings {
  std::size_t bytes = 64u << 20;
  int repeats = 20, warmup = 3, latency_iters = 100;
};

/// Seconds of `enqueue` on `stream`, one sample per repeat, after `warmup` untimed runs.
std::vector<double> time_on_stream(cudaStream_t stream, const Settings& s, int inner,
                                   const std::function<void()>& enqueue)
{
  Timer t;
  std::vector<double> out;
  for (int r = 0; r < s.warmup + s.repeats; ++r) {
    DTSIM_CUDA(cudaEventRecord(t.start, stream));
    for (int k = 0; k < inner; ++k)
      enqueue();
    DTSIM_CUDA(cudaEventRecord(t.stop, stream));
    DTSIM_CUDA(cudaEventSynchronize(t.stop));
    float ms = 0;
    DTSIM_CUDA(cudaEventElapsedTime(&ms, t.start, t.stop));
    if (r >= s.warmup)
      out.push_back(ms * 1e-3 / inner);
  }
  return out;
}

/// Bandwidth samples (GB/s) from time samples of `bytes`.
Stats bandwidth(const std::vector<double>& seconds, double bytes)
{
  std::vector<double> gbps;
  for (double t : seconds)
    gbps.push_back(bytes / t / 1e9);
  return summarize(gbps);
}

struct Results {
  BandwidthMeasurements median, lo, hi;
  void set_host(std::vector<double> BandwidthMeasurements::*slot, int gpu, const Stats& st)
  {
    for (auto* m : {&median, &lo, &hi})
      if ((m->*slot).size() <= static_cast<std::size_t>(gpu))
        (m->*slot).resize(gpu + 1, std::numeric_limits<double>::quiet_NaN());
    (median.*slot)[gpu] = st.median;
    (lo.*slot)[gpu] = st.min;
    (hi.*slot)[gpu] = st.max;
  }
  void set_cell(Matrix BandwidthMeasurements::*slot, int n, int i, int j, const Stats& st)
  {
    for (auto* m : {&median, &lo, &hi})
      if ((m->*slot).empty())
        (m->*slot).assign(n, std::vector<double>(n, std::numeric_limits<double>::quiet_NaN()));
    (median.*slot)[i][j] = st.median;
    (lo.*slot)[i][j] = st.min;
    (hi.*slot)[i][j] = st.max;
  }
};

void measure_host(int gpu, const Settings& s, Results& res)
{
  DTSIM_CUDA(cudaSetDevice(gpu));
  void *dev = nullptr, *dev2 = nullptr, *pinned = nullptr;
  DTSIM_CUDA(cudaMalloc(&dev, s.bytes));
  DTSIM_CUDA(cudaMalloc(&dev2, s.bytes));
  DTSIM_CUDA(cudaMallocHost(&pinned, s.bytes));
  std::vector<char> pageable(s.bytes, 1);
  cudaStream_t st{};
  DTSIM_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const double b = static_cast<double>(s.bytes);
  using B = BandwidthMeasurements;
  res.set_host(&B::h2d_pinned_GBps, gpu, bandwidth(time_on_stream(st, s, 1, [&] {
    DTSIM_CUDA(cudaMemcpyAsync(dev, pinned, s.bytes, cudaMemcpyHostToDevice, st)); }), b));
  res.set_host(&B::d2h_pinned_GBps, gpu, bandwidth(time_on_stream(st, s, 1, [&] {
    DTSIM_CUDA(cudaMemcpyAsync(pinned, dev, s.bytes, cudaMemcpyDeviceToHost, st)); }), b));
  // Pageable copies are synchronous with the host: timed on the host clock.
  for (bool to_device : {true, false}) {
    std::vector<double> secs;
    for (int r = 0; r < s.warmup + s.repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      if (to_device)
        DTSIM_CUDA(cudaMemcpy(dev, pageable.data(), s.bytes, cudaMemcpyHostToDevice));
      else
        DTSIM_CUDA(cudaMemcpy(pageable.data(), dev, s.bytes, cudaMemcpyDeviceToHost));
      const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
      if (r >= s.warmup)
        secs.push_back(dt.count());
    }
    res.set_host(to_device ? &B::h2d_pageable_GBps : &B::d2h_pageable_GBps, gpu, bandwidth(secs, b));
  }
  res.set_host(&B::d2d_GBps, gpu, bandwidth(time_on_stream(st, s, 1, [&] {
    DTSIM_CUDA(cudaMemcpyAsync(dev2, dev, s.bytes, cudaMemcpyDeviceToDevice, st)); }), 2 * b));
  DTSIM_CUDA(cudaStreamDestroy(st));
  DTSIM_CUDA(cudaFreeHost(pinned));
  DTSIM_CUDA(cudaFree(dev));
  DTSIM_CUDA(cudaFree(dev2));
}

void set_peer_access(int n, bool enable)
{
  for (int i = 0; i < n; ++i) {
    DTSIM_CUDA(cudaSetDevice(i));
    for (int j = 0; j < n; ++j) {
      int can = 0;
      if (i == j || (DTSIM_CUDA(cudaDeviceCanAccessPeer(&can, i, j)), !can))
        continue;
      const cudaError_t e = enable ? cudaDeviceEnablePeerAccess(j, 0) : cudaDeviceDisablePeerAccess(j);
      if (e == cudaErrorPeerAccessAlreadyEnabled || e == cudaErrorPeerAccessNotEnabled)
        (void)cudaGetLastError();  // already in the wanted state
      else
        DTSIM_CUDA(e);
    }
  }
}

void measure_peers(int n, const Settings& s, Results& res)
{
  using B = BandwidthMeasurements;
  std::vector<void*> buf(n), back(n);
  std::vector<cudaStream_t> st(n);
  for (int i = 0; i < n; ++i) {
    DTSIM_CUDA(cudaSetDevice(i));
    DTSIM_CUDA(cudaMalloc(&buf[i], s.bytes));
    DTSIM_CUDA(cudaMalloc(&back[i], s.bytes));
    DTSIM_CUDA(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
    for (int j = 0; j < n; ++j) {
      int can = 0;
      if (i != j)
        DTSIM_CUDA(cudaDeviceCanAccessPeer(&can, i, j));
      res.set_cell(&B::p2p_connectivity, n, i, j, Stats{i == j || can ? 1.0 : 0.0, i == j || can ? 1.0 : 0.0, i == j || can ? 1.0 : 0.0, 1});
    }
  }
  const double b = static_cast<double>(s.bytes);
  Timer both;
  for (bool enabled : {false, true}) {
    set_peer_access(n, enabled);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        DTSIM_CUDA(cudaSetDevice(i));
        res.set_cell(enabled ? &B::unidir_p2p_GBps : &B::unidir_nop2p_GBps, n, i, j,
                     bandwidth(time_on_stream(st[i], s, 1, [&] {
                       DTSIM_CUDA(cudaMemcpyPeerAsync(back[j], j, buf[i], i, s.bytes, st[i])); }), b));
        res.set_cell(enabled ? &B::latency_p2p_us : &B::latency_nop2p_us, n, i, j, [&] {
          auto secs = time_on_stream(st[i], s, s.latency_iters, [&] {
            DTSIM_CUDA(cudaMemcpyPeerAsync(back[j], j, buf[i], i, 4, st[i])); });
          for (double& x : secs)
            x *= 1e6;
          return summarize(secs);
        }());
        if (i == j)
          continue;
        // Both directions at once: j's stream waits for i's start event; i's stop waits for j.
        res.set_cell(enabled ? &B::bidir_p2p_GBps : &B::bidir_nop2p_GBps, n, i, j,
                     bandwidth(time_on_stream(st[i], s, 1, [&] {
                       DTSIM_CUDA(cudaEventRecord(both.start, st[i]));
                       DTSIM_CUDA(cudaStreamWaitEvent(st[j], both.start, 0));
                       DTSIM_CUDA(cudaMemcpyPeerAsync(back[j], j, buf[i], i, s.bytes, st[i]));
                       DTSIM_CUDA(cudaMemcpyPeerAsync(back[i], i, buf[j], j, s.bytes, st[j]));
                       DTSIM_CUDA(cudaEventRecord(both.stop, st[j]));
                       DTSIM_CUDA(cudaStreamWaitEvent(st[i], both.stop, 0)); }), 2 * b));
      }
  }
  set_peer_access(n, false);
  for (int i = 0; i < n; ++i) {
    DTSIM_CUDA(cudaSetDevice(i));
    DTSIM_CUDA(cudaStreamDestroy(st[i]));
    DTSIM_CUDA(cudaFree(buf[i]));
    DTSIM_CUDA(cudaFree(back[i]));
  }
}

int bench_link(int argc, char** argv)
{
  Args args(argc, argv, {"--size", "--repeats", "--warmup", "--latency-iters", "--json"}, {"--no-p2p", "--help", "-h"});
  if (args.flag("--help") || args.flag("-h")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  Settings s;
  s.bytes = static_cast<std::size_t>(args.get_int("--size", s.bytes));
  s.repeats = static_cast<int>(args.get_int("--repeats", s.repeats));
  s.warmup = static_cast<int>(args.get_int("--warmup", s.warmup));
  s.latency_iters = static_cast<int>(args.get_int("--latency-iters", s.latency_iters));
  if (s.bytes < 4 || s.repeats < 1 || s.latency_iters < 1)
    throw BenchError("expected --size >= 4, --repeats >= 1 and --latency-iters >= 1");
  const nlohmann::json machine = machine_description();
  const int n = static_cast<int>(machine["gpus"].size());
  Results res;
  for (const auto& g : machine["gpus"])
    res.median.gpu_names.push_back(g["name"]);
  for (int g = 0; g < n; ++g)
    measure_host(g, s, res);
  nlohmann::json not_measured = nlohmann::json::array();
  if (args.flag("--no-p2p"))
    not_measured.push_back("GPU-to-GPU matrices: skipped (--no-p2p)");
  else if (n < 2)
    not_measured.push_back("GPU-to-GPU matrices: this machine has one GPU only");
  else
    measure_peers(n, s, res);
  std::printf("# dtsim-bench-link: %zu bytes per copy, median of %d repeats after %d warm-up\n", s.bytes,
              s.repeats, s.warmup);
  for (const auto& why : not_measured)
    std::printf("# not measured: %s\n", why.get<std::string>().c_str());
  std::fputs(calibration::format_bandwidth_report(res.median).c_str(), stdout);
  if (!machine["topology_text"].is_null())
    std::fputs(machine["topology_text"].get<std::string>().c_str(), stdout);
  if (args.flag("--json")) {
    nlohmann::json out = calibration::bandwidth_to_json(res.median);
    out["tool"] = "dtsim-bench-link";
    out["schema_version"] = 1;
    out["machine"] = machine;
    out["settings"] = {{"bytes", s.bytes}, {"repeats", s.repeats}, {"warmup", s.warmup},
                       {"latency_iters", s.latency_iters}, {"statistic", "median"}};
    out["spread"] = {{"min", calibration::bandwidth_to_json(res.lo)}, {"max", calibration::bandwidth_to_json(res.hi)}};
    out["not_measured"] = not_measured;
    write_file(args.get("--json", ""), out.dump(2) + "\n");
  }
  return 0;
}

}  // namespace
}  // namespace dtsim::bench

int main(int argc, char** argv) { return dtsim::bench::run_main("dtsim-bench-link", dtsim::bench::bench_link, argc, argv); }
