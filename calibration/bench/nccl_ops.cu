#include "calibration/bench/nccl_ops.hpp"

#include "calibration/bench/bench_common.hpp"

namespace dtsim::bench {

namespace {

void check_nccl(ncclResult_t r, const char* what, const char* file, int line)
{
  if (r != ncclSuccess)
    throw BenchError(std::string(what) + " failed at " + file + ":" + std::to_string(line) + ": " +
                     ncclGetErrorString(r));
}
#define DTSIM_NCCL(call) check_nccl((call), #call, __FILE__, __LINE__)

__host__ __device__ inline float pattern(std::size_t i) { return static_cast<float>(i % 13 + 1); }

__global__ void fill_kernel(float* p, std::size_t n, float scale)
{
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = scale * pattern(i);
}

__global__ void verify_kernel(const float* out, std::size_t n, int op, int rank, int nranks, std::size_t count,
                              unsigned long long* wrong)
{
  const float sum = 0.5f * nranks * (nranks + 1);
  unsigned long long bad = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float expect = 0;
    switch (static_cast<Op>(op)) {
    case Op::AllReduce:
    case Op::Reduce: expect = sum * pattern(i); break;
    case Op::AllGather: expect = (i / count + 1) * pattern(i % count); break;
    case Op::ReduceScatter: expect = sum * pattern(rank * count + i); break;
    case Op::Broadcast: expect = pattern(i); break;   // root 0 sends 1 x pattern
    case Op::AllToAll: expect = (i / count + 1) * pattern(rank * count + i % count); break;
    case Op::SendRecv: expect = ((rank + nranks - 1) % nranks + 1) * pattern(i); break;
    }
    bad += out[i] != expect;
  }
  if (bad)
    atomicAdd(wrong, bad);
}

/// Input pointer and element count of this rank for the op.
float* input_of(Op op, const RankBuffers& b, int nranks, std::size_t count, bool in_place, std::size_t& n)
{
  n = (op == Op::ReduceScatter || op == Op::AllToAll) ? count * nranks : count;
  if (!in_place)
    return b.send;
  return op == Op::AllGather ? b.recv + b.rank * count : b.recv;
}

/// Output pointer and element count to check (0 for a non-root rank of Reduce).
const float* output_of(Op op, const RankBuffers& b, int nranks, std::size_t count, bool in_place, std::size_t& n)
{
  n = (op == Op::AllGather || op == Op::AllToAll) ? count * nranks : count;
  if (op == Op::Reduce && b.rank != 0)
    n = 0;
  return (op == Op::ReduceScatter && in_place) ? b.recv + b.rank * count : b.recv;
}

}  // namespace

const std::vector<OpInfo>& all_ops()
{
  static const std::vector<OpInfo> ops = {
      {Op::AllReduce, "all_reduce", "sum", -1, true},   {Op::AllGather, "all_gather", "none", -1, true},
      {Op::ReduceScatter, "reduce_scatter", "sum", -1, true}, {Op::Broadcast, "broadcast", "none", 0, true},
      {Op::Reduce, "reduce", "sum", 0, true},           {Op::AllToAll, "alltoall", "none", -1, false},
      {Op::SendRecv, "sendrecv", "none", -1, false}};
  return ops;
}

const OpInfo& op_info(const std::string& name)
{
  for (const auto& o : all_ops())
    if (name == o.name)
      return o;
  throw BenchError("unknown operation '" + name +
                   "' (expected all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv)");
}

std::size_t op_count(Op op, std::size_t bytes, int nranks)
{
  const std::size_t elems = bytes / sizeof(float);
  switch (op) {
  case Op::AllGather:
  case Op::ReduceScatter:
  case Op::AllToAll: return elems / nranks;
  default: return elems;
  }
}

std::size_t op_bytes(Op op, std::size_t count, int nranks)
{
  const std::size_t b = count * sizeof(float);
  return (op == Op::AllGather || op == Op::ReduceScatter || op == Op::AllToAll) ? b * nranks : b;
}

double bus_factor(Op op, int n)
{
  switch (op) {
  case Op::AllReduce: return 2.0 * (n - 1) / n;
  case Op::AllGather:
  case Op::ReduceScatter:
  case Op::AllToAll: return static_cast<double>(n - 1) / n;
  default: return 1.0;
  }
}

void launch(Op op, const RankBuffers& b, int nranks, std::size_t count, bool in_place)
{
  std::size_t n = 0;
  const float* in = input_of(op, b, nranks, count, in_place, n);
  float* out = (op == Op::ReduceScatter && in_place) ? b.recv + b.rank * count : b.recv;
  switch (op) {
  case Op::AllReduce: DTSIM_NCCL(ncclAllReduce(in, out, count, ncclFloat, ncclSum, b.comm, b.stream)); break;
  case Op::AllGather: DTSIM_NCCL(ncclAllGather(in, out, count, ncclFloat, b.comm, b.stream)); break;
  case Op::ReduceScatter: DTSIM_NCCL(ncclReduceScatter(in, out, count, ncclFloat, ncclSum, b.comm, b.stream)); break;
  case Op::Broadcast: DTSIM_NCCL(ncclBroadcast(in, out, count, ncclFloat, 0, b.comm, b.stream)); break;
  case Op::Reduce: DTSIM_NCCL(ncclReduce(in, out, count, ncclFloat, ncclSum, 0, b.comm, b.stream)); break;
  case Op::AllToAll:   // as nccl-tests: one send and one receive per peer in a group
    DTSIM_NCCL(ncclGroupStart());
    for (int p = 0; p < nranks; ++p) {
      DTSIM_NCCL(ncclSend(b.send + p * count, count, ncclFloat, p, b.comm, b.stream));
      DTSIM_NCCL(ncclRecv(b.recv + p * count, count, ncclFloat, p, b.comm, b.stream));
    }
    DTSIM_NCCL(ncclGroupEnd());
    break;
  case Op::SendRecv:   // ring: send to the next rank, receive from the previous one
    DTSIM_NCCL(ncclGroupStart());
    DTSIM_NCCL(ncclSend(b.send, count, ncclFloat, (b.rank + 1) % nranks, b.comm, b.stream));
    DTSIM_NCCL(ncclRecv(b.recv, count, ncclFloat, (b.rank + nranks - 1) % nranks, b.comm, b.stream));
    DTSIM_NCCL(ncclGroupEnd());
    break;
  }
}

void prepare_check(Op op, const RankBuffers& b, int nranks, std::size_t count, bool in_place)
{
  DTSIM_CUDA(cudaSetDevice(b.device));
  std::size_t out_n = 0, in_n = 0;
  const float* out = output_of(op, b, nranks, count, in_place, out_n);
  if (!in_place)
    DTSIM_CUDA(cudaMemsetAsync(const_cast<float*>(out), 0, out_n * sizeof(float), b.stream));
  float* in = input_of(op, b, nranks, count, in_place, in_n);
  const float scale = op == Op::Broadcast ? (b.rank == 0 ? 1.0f : -1.0f) : static_cast<float>(b.rank + 1);
  fill_kernel<<<256, 256, 0, b.stream>>>(in, in_n, scale);
  DTSIM_CUDA(cudaGetLastError());
  DTSIM_CUDA(cudaMemsetAsync(b.wrong, 0, sizeof(unsigned long long), b.stream));
}

void enqueue_verify(Op op, const RankBuffers& b, int nranks, std::size_t count, bool in_place)
{
  DTSIM_CUDA(cudaSetDevice(b.device));
  std::size_t n = 0;
  const float* out = output_of(op, b, nranks, count, in_place, n);
  if (n == 0)
    return;
  verify_kernel<<<256, 256, 0, b.stream>>>(out, n, static_cast<int>(op), b.rank, nranks, count, b.wrong);
  DTSIM_CUDA(cudaGetLastError());
}

unsigned long long read_wrong(const RankBuffers& b)
{
  unsigned long long w = 0;
  DTSIM_CUDA(cudaSetDevice(b.device));
  DTSIM_CUDA(cudaMemcpyAsync(&w, b.wrong, sizeof w, cudaMemcpyDeviceToHost, b.stream));
  DTSIM_CUDA(cudaStreamSynchronize(b.stream));
  return w;
}

}  // namespace dtsim::bench
