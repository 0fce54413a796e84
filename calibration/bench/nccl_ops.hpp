// The collectives dtsim-bench-nccl sweeps: buffer layout, launch, input pattern and result check,
// and the sizes and bus-bandwidth factors as nccl-tests defines them (float data, sum).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <string>
#include <vector>

namespace dtsim::bench {

enum class Op { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, SendRecv };

struct OpInfo {
  Op op;
  const char* name;   ///< nccl-tests name without _perf: "all_reduce" ...
  const char* redop;  ///< column "redop": "sum" or "none"
  int root;           ///< column "root": -1 or 0
  bool in_place;      ///< NCCL defines an in-place variant
};

const std::vector<OpInfo>& all_ops();
const OpInfo& op_info(const std::string& name);   ///< throws BenchError for an unknown name

/// Elements per rank ("count" column) for a requested size, and the size column in bytes.
std::size_t op_count(Op op, std::size_t bytes, int nranks);
std::size_t op_bytes(Op op, std::size_t count, int nranks);
/// algbw -> busbw factor (nccl-tests PERFORMANCE.md).
double bus_factor(Op op, int nranks);

struct RankBuffers {
  int rank = 0, device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* recv = nullptr;
  unsigned long long* wrong = nullptr;   ///< device counter for the check
};

/// Enqueues one operation on this rank (inside the caller's ncclGroupStart/End).
void launch(Op op, const RankBuffers& b, int nranks, std::size_t count, bool in_place);
/// Writes this rank's input (values (rank+1) x ((i mod 13) + 1)) and clears the output.
void prepare_check(Op op, const RankBuffers& b, int nranks, std::size_t count, bool in_place);
/// Counts wrong output elements on this rank (after the op completed); stream-ordered.
void enqueue_verify(Op op, const RankBuffers& b, int nranks, std::size_t count, bool in_place);
unsigned long long read_wrong(const RankBuffers& b);

}  // namespace dtsim::bench
