// dtsim-bench-nccl: a sweep of NCCL collectives over sizes, algorithms and protocols, checked for
// correctness, printed in nccl-tests' table format (so `dtsim calibrate` reads it like any
// nccl-tests log) and, with --json, as JSON with the machine description.
#include "calibration/bench/bench_common.hpp"
#include "calibration/bench/nccl_ops.hpp"
#include "calibration/bench/rendezvous.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

namespace dtsim::bench {
namespace {

const char* kHelp = R"(dtsim-bench-nccl: NCCL collective bandwidth sweep in nccl-tests' output format.

usage: dtsim-bench-nccl [--ops LIST|all] [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]
                        [--repeats R] [-c 0|1] [--algos LIST] [--protos LIST] [--json FILE]
                        [--gpus N] [--rank R --nranks N --rendezvous SPEC [--device D]]
                        [--dry-run] [--help]

  --ops LIST     all_reduce,all_gather,reduce_scatter,broadcast,reduce,alltoall,sendrecv or all
                 (default all_reduce)
  -b, -e, -f     sizes from MIN to MAX bytes, multiplied by FACTOR (default 8, 128M, 2; K/M/G)
  -n, -w         timed and warm-up iterations per sample (default 20, 5)
  --repeats R    samples per size; the table shows the median, the JSON also min and max (default 5)
  -c 0|1         check every result element (default 1); #wrong is N/A with 0
  --algos LIST   values of NCCL_ALGO to sweep, e.g. Ring,Tree (default: leave NCCL_ALGO as is)
  --protos LIST  values of NCCL_PROTO to sweep, e.g. LL,LL128,Simple (default: as is)
  --json FILE    also write every sample and the machine description as JSON

One process for all local GPUs (default; --gpus N uses the first N), or one process per GPU:
  --rank R --nranks N --rendezvous file:/shared/path | tcp:HOST:PORT [--device D]
rank 0 publishes NCCL's unique id through the shared file or on TCP port PORT (+k for the k-th
algorithm/protocol pair); RANK/WORLD_SIZE/LOCAL_RANK, OMPI_COMM_WORLD_* and SLURM_PROCID/NTASKS/
LOCALID are read when --rank/--nranks/--device are not given. Use a fresh file path per run.
--dry-run prints the plan (sizes, operations, settings) and exits without touching a GPU.
)";

struct Plan {
  std::vector<const OpInfo*> ops;
  std::vector<std::size_t> sizes;
  int iters = 20, warmup = 5, repeats = 5;
  bool check = true;
  std::vector<std::string> algos, protos;
  int rank = 0, nranks = 1, device = -1, local_gpus = 0;
  std::string rendezvous;
  bool multi_process() const { return !rendezvous.empty(); }
};

void check(ncclResult_t r, const char* what)
{
  if (r != ncclSuccess)
    throw BenchError(std::string(what) + " failed: " + ncclGetErrorString(r));
}

int env_int(std::initializer_list<const char*> names, int fallback)
{
  for (const char* n : names)
    if (const char* v = std::getenv(n))
      return std::atoi(v);
  return fallback;
}

/// nccl-tests' getFloatStr: %.2f, else %.1f, else %.0f, else exponent form, to fit `width`.
std::string float_str(double v, int width)
{
  char buf[64];
  for (int digits = 2; digits >= 0; --digits) {
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    if (static_cast<int>(std::strlen(buf)) <= width)
      return buf;
  }
  std::snprintf(buf, sizeof buf, "%.0e", v);
  return buf;
}

struct Sample {
  double median_us = 0, min_us = 0, max_us = 0;
  long long wrong = -1;   // -1: not checked
};

class Sweep {
public:
  Sweep(const Plan& p) : plan_(p) {}
  ~Sweep() { destroy(); }
  void init(int combo);
  Sample run(const OpInfo& op, std::size_t count, bool in_place);
  void destroy();

private:
  const Plan& plan_;
  std::vector<RankBuffers> ranks_;
  void group_launch(const OpInfo& op, std::size_t count, bool in_place, int times);
  void sync_all();
};

void Sweep::init(int combo)
{
  const std::size_t max_bytes = plan_.sizes.back() + 64;
  if (plan_.multi_process()) {
    ncclUniqueId id{};
    if (plan_.rank == 0)
      check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    const std::string got = exchange_unique_id(plan_.rendezvous, plan_.rank, plan_.nranks, combo,
                                               std::string(reinterpret_cast<char*>(&id), sizeof id), 300.0);
    std::memcpy(&id, got.data(), sizeof id);
    RankBuffers b;
    b.rank = plan_.rank;
    b.device = plan_.device;
    DTSIM_CUDA(cudaSetDevice(b.device));
    check(ncclCommInitRank(&b.comm, plan_.nranks, id, plan_.rank), "ncclCommInitRank");
    ranks_.push_back(b);
  } else {
    std::vector<ncclComm_t> comms(plan_.nranks);
    std::vector<int> devs(plan_.nranks);
    for (int r = 0; r < plan_.nranks; ++r)
      devs[r] = r;
    check(ncclCommInitAll(comms.data(), plan_.nranks, devs.data()), "ncclCommInitAll");
    for (int r = 0; r < plan_.nranks; ++r) {
      RankBuffers b;
      b.rank = r;
      b.device = r;
      b.comm = comms[r];
      ranks_.push_back(b);
    }
  }
  for (auto& b : ranks_) {
    DTSIM_CUDA(cudaSetDevice(b.device));
    DTSIM_CUDA(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    DTSIM_CUDA(cudaMalloc(&b.send, max_bytes));
    DTSIM_CUDA(cudaMalloc(&b.recv, max_bytes));
    DTSIM_CUDA(cudaMalloc(&b.wrong, sizeof(unsigned long long)));
  }
}

void Sweep::destroy()
{
  for (auto& b : ranks_) {
    cudaSetDevice(b.device);
    cudaFree(b.send);
    cudaFree(b.recv);
    cudaFree(b.wrong);
    cudaStreamDestroy(b.stream);
    ncclCommDestroy(b.comm);
  }
  ranks_.clear();
}

void Sweep::group_launch(const OpInfo& op, std::size_t count, bool in_place, int times)
{
  for (int t = 0; t < times; ++t) {
    check(ncclGroupStart(), "ncclGroupStart");
    for (const auto& b : ranks_)
      launch(op.op, b, plan_.nranks, count, in_place);
    check(ncclGroupEnd(), "ncclGroupEnd");
  }
}

void Sweep::sync_all()
{
  for (const auto& b : ranks_) {
    DTSIM_CUDA(cudaSetDevice(b.device));
    DTSIM_CUDA(cudaStreamSynchronize(b.stream));
  }
}

Sample Sweep::run(const OpInfo& op, std::size_t count, bool in_place)
{
  Sample s;
  if (plan_.check) {
    for (const auto& b : ranks_)
      prepare_check(op.op, b, plan_.nranks, count, in_place);
    group_launch(op, count, in_place, 1);
    s.wrong = 0;
    for (const auto& b : ranks_) {
      enqueue_verify(op.op, b, plan_.nranks, count, in_place);
      s.wrong += static_cast<long long>(read_wrong(b));
    }
  }
  group_launch(op, count, in_place, plan_.warmup);
  sync_all();
  std::vector<double> us;
  for (int r = 0; r < plan_.repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    group_launch(op, count, in_place, plan_.iters);
    sync_all();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / plan_.iters);
  }
  const Stats st = summarize(us);
  s.median_us = st.median;
  s.min_us = st.min;
  s.max_us = st.max;
  return s;
}

Plan read_plan(const Args& a)
{
  Plan p;
  for (const auto& name : a.list("--ops", "all_reduce")) {
    if (name == "all")
      for (const auto& o : all_ops())
        p.ops.push_back(&o);
    else
      p.ops.push_back(&op_info(name));
  }
  const long long lo = a.get_int("-b", 8), hi = a.get_int("-e", 128LL << 20);
  const double factor = std::stod(a.get("-f", "2"));
  if (lo < 4 || hi < lo || factor <= 1)
    throw BenchError("expected 4 <= -b <= -e and -f > 1");
  for (double s = static_cast<double>(lo); s <= static_cast<double>(hi) * 1.0000001; s *= factor)
    p.sizes.push_back(static_cast<std::size_t>(s));
  p.iters = static_cast<int>(a.get_int("-n", 20));
  p.warmup = static_cast<int>(a.get_int("-w", 5));
  p.repeats = static_cast<int>(a.get_int("--repeats", 5));
  p.check = a.get("-c", "1") != "0";
  if (p.iters < 1 || p.repeats < 1)
    throw BenchError("expected -n >= 1 and --repeats >= 1");
  p.algos = a.list("--algos", "");
  p.protos = a.list("--protos", "");
  p.rendezvous = a.get("--rendezvous", "");
  p.rank = static_cast<int>(a.get_int("--rank", env_int({"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}, 0)));
  p.nranks = static_cast<int>(a.get_int("--nranks", env_int({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"}, 0)));
  p.device = static_cast<int>(a.get_int("--device", env_int({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}, -1)));
  p.local_gpus = static_cast<int>(a.get_int("--gpus", 0));
  if (p.multi_process() && (p.nranks < 1 || p.rank < 0 || p.rank >= p.nranks))
    throw BenchError("with --rendezvous, expected --nranks N >= 1 and 0 <= --rank < N (or RANK/WORLD_SIZE)");
  return p;
}

void print_header(const Plan& p, const OpInfo& op, const std::string& algo, const std::string& proto, int nranks)
{
  int nccl = 0;
  ncclGetVersion(&nccl);
  std::printf("# dtsim-bench-nccl (nccl-tests table format) nccl-library=%d NCCL_ALGO=%s NCCL_PROTO=%s\n", nccl,
              algo.c_str(), proto.c_str());
  std::printf("# Collective test starting: %s_perf\n", op.name);
  std::printf("# nThread 1 nGpus %d minBytes %zu maxBytes %zu step: 2(factor) warmup iters: %d iters: %d agg iters: 1 "
              "validation: %d graph: 0\n", p.multi_process() ? 1 : nranks, p.sizes.front(), p.sizes.back(), p.warmup,
              p.iters, p.check ? 1 : 0);
  std::printf("# ranks: %d; time = median of %d samples of %d iterations%s\n", nranks, p.repeats, p.iters,
              p.multi_process() ? " (wall clock of rank 0)" : "");
  if (!op.in_place)
    std::printf("# in-place columns repeat the out-of-place measurement (%s has no in-place form)\n", op.name);
  std::printf("#\n#%62s%35s\n", "out-of-place", "in-place");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type",
              "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "",
              "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

int bench_nccl(int argc, char** argv)
{
  Args args(argc, argv,
            {"--ops", "-b", "-e", "-f", "-n", "-w", "--repeats", "-c", "--algos", "--protos", "--json", "--gpus",
             "--rank", "--nranks", "--rendezvous", "--device"},
            {"--dry-run", "--help", "-h"});
  if (args.flag("--help") || args.flag("-h")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  Plan plan = read_plan(args);
  if (plan.algos.empty())
    plan.algos = {""};
  if (plan.protos.empty())
    plan.protos = {""};
  if (args.flag("--dry-run")) {
    std::printf("dtsim-bench-nccl plan: %zu operation(s), %zu size(s) from %zu to %zu B, %zu algorithm x %zu protocol "
                "setting(s), %d x %d iterations per size, check %s, %s\n",
                plan.ops.size(), plan.sizes.size(), plan.sizes.front(), plan.sizes.back(), plan.algos.size(),
                plan.protos.size(), plan.repeats, plan.iters, plan.check ? "on" : "off",
                plan.multi_process() ? "one process per GPU" : "one process for all local GPUs");
    return 0;
  }
  const int devices = cuda_device_count();
  if (plan.multi_process()) {
    if (plan.device < 0)
      plan.device = plan.rank % devices;
  } else {
    plan.nranks = plan.local_gpus > 0 ? plan.local_gpus : devices;
    if (plan.nranks > devices)
      throw BenchError("--gpus " + std::to_string(plan.nranks) + " but only " + std::to_string(devices) + " GPU(s)");
  }
  const bool printer = plan.rank == 0 || !plan.multi_process();
  nlohmann::json results = nlohmann::json::array();
  int combo = 0;
  for (const auto& algo : plan.algos)
    for (const auto& proto : plan.protos) {
      if (!algo.empty())
        setenv("NCCL_ALGO", algo.c_str(), 1);
      if (!proto.empty())
        setenv("NCCL_PROTO", proto.c_str(), 1);
      const std::string algo_s = std::getenv("NCCL_ALGO") ? std::getenv("NCCL_ALGO") : "default";
      const std::string proto_s = std::getenv("NCCL_PROTO") ? std::getenv("NCCL_PROTO") : "default";
      Sweep sweep(plan);
      sweep.init(combo++);
      for (const OpInfo* op : plan.ops) {
        if (printer)
          print_header(plan, *op, algo_s, proto_s, plan.nranks);
        double bw_sum = 0;
        int bw_n = 0;
        for (std::size_t size : plan.sizes) {
          const std::size_t count = op_count(op->op, size, plan.nranks);
          if (count == 0)
            continue;
          const double bytes = static_cast<double>(op_bytes(op->op, count, plan.nranks));
          const std::size_t algbw_bytes = op->op == Op::AllGather || op->op == Op::ReduceScatter || op->op == Op::AllToAll
                                              ? op_bytes(op->op, count, plan.nranks) : count * sizeof(float);
          std::string row;
          char buf[256];
          std::snprintf(buf, sizeof buf, "%12zu  %12zu  %8s  %6s  %6d", static_cast<std::size_t>(bytes), count, "float",
                        op->redop, op->root);
          row = buf;
          for (bool in_place : {false, true}) {
            const Sample s = sweep.run(*op, count, in_place && op->in_place);
            const double algbw = static_cast<double>(algbw_bytes) / 1e3 / s.median_us;   // GB/s
            const double busbw = algbw * bus_factor(op->op, plan.nranks);
            bw_sum += busbw;
            ++bw_n;
            std::snprintf(buf, sizeof buf, "  %7s  %6s  %6s  %6s", float_str(s.median_us, 7).c_str(),
                          float_str(algbw, 6).c_str(), float_str(busbw, 6).c_str(),
                          s.wrong < 0 ? "N/A" : std::to_string(s.wrong).c_str());
            row += buf;
            results.push_back({{"op", op->name}, {"nccl_algo", algo_s}, {"nccl_proto", proto_s}, {"bytes", bytes},
                               {"count", count}, {"in_place", in_place}, {"nranks", plan.nranks},
                               {"time_us", {{"median", s.median_us}, {"min", s.min_us}, {"max", s.max_us}}},
                               {"algbw_GBps", algbw}, {"busbw_GBps", busbw},
                               {"wrong", s.wrong < 0 ? nlohmann::json(nullptr) : nlohmann::json(s.wrong)}});
          }
          if (printer)
            std::printf("%s\n", row.c_str());
        }
        if (printer) {
          std::printf("# Avg bus bandwidth    : %g \n#\n# Collective test concluded: %s_perf\n\n",
                      bw_n ? bw_sum / bw_n : 0.0, op->name);
          std::fflush(stdout);
        }
      }
    }
  if (printer && !args.get("--json", "").empty()) {
    int nccl = 0;
    ncclGetVersion(&nccl);
    nlohmann::json out = {{"tool", "dtsim-bench-nccl"}, {"schema_version", 1}, {"machine", machine_description()},
                          {"nccl_version", nccl}, {"nranks", plan.nranks},
                          {"mode", plan.multi_process() ? "process-per-gpu" : "single-process"},
                          {"settings", {{"iters", plan.iters}, {"warmup", plan.warmup}, {"repeats", plan.repeats},
                                        {"check", plan.check}, {"statistic", "median"}}},
                          {"results", results}};
    write_file(args.get("--json", ""), out.dump(2) + "\n");
  }
  return 0;
}

}  // namespace
}  // namespace dtsim::bench

int main(int argc, char** argv) { return dtsim::bench::run_main("dtsim-bench-nccl", dtsim::bench::bench_nccl, argc, argv); }
