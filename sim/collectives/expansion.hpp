// Shared state of one collective's expansion into tasks: the layout, the chosen (algorithm,
// protocol), and helpers that add transfers whose wire bytes include the protocol's and the link
// class's overhead, so that the engine's max-min sharing sees the real load on each link.
#pragma once

#include "sim/collectives/collective.hpp"
#include "sim/collectives/comm_layout.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

class Expansion {
public:
  Expansion(TaskGraph& graph, const Topology& topology, const CollectiveCall& call, const CommLayout& layout,
            const NcclParams& params, NcclAlgo algo, NcclProto proto);

  TaskGraph& graph;
  const Topology& topology;
  const CollectiveCall& call;
  const CommLayout& layout;
  const NcclParams& params;
  NcclAlgo algo;
  NcclProto proto;

  int n() const { return static_cast<int>(call.ranks.size()); }
  int device(int rank) const { return call.ranks[static_cast<std::size_t>(rank)]; }

  /// Adds a transfer of `payload` bytes between two devices; `extra_efficiency` multiplies the
  /// route's efficiency (e.g. NVLS).
  int transfer(int src_device, int dst_device, double payload, const std::string& what, std::vector<int> after,
               double extra_efficiency = 1.0);
  /// A zero-length marker on `rank` after `after` (joins several tasks into one).
  int join(int rank, std::vector<int> after, const std::string& what);

  /// Payload fraction of the wire bytes: LL 0.5, LL128 0.92, Simple 1, lowered where NCCL caps the
  /// protocol's throughput below what the links give (set by the dispatcher).
  double protocol_factor = 1.0;
  /// Merge consecutive ring steps into at most 16 super-steps (off for the textbook ring).
  bool merge_ring_steps = true;

  /// Per rank: the task its first transfer waits for (the start-up latency, after start_after).
  std::vector<int> start;

private:
  int one_flow(int src_device, int dst_device, double payload, const std::string& what, std::vector<int> after,
               double extra_efficiency);
  /// The NIC a GPU's channel uses: the one beside it (local index scaled to the NIC count).
  int nic_of(int gpu) const;
  std::map<std::pair<int, int>, double> efficiency_;
};

/// Payload fraction of a protocol's wire bytes: LL 0.5, LL128 0.92 (tuning.cc), Simple 1.
double protocol_efficiency(NcclProto p);

/// Number of pipeline stages for `bytes` moved in chunks of `chunk_bytes` (bounded flow count).
int pipeline_chunks(double bytes, double chunk_bytes, int max_chunks = 8);
/// Chunk sizes of a pipeline of `bytes` in at most `max_chunks` chunks of about `chunk_bytes`:
/// from 8 chunks on, the first and last three are 1/8, 1/4, 1/2 of the others, so that filling and
/// draining the pipeline costs a small chunk, as NCCL's small real chunks do, with few flows.
std::vector<double> pipeline_chunk_sizes(double bytes, double chunk_bytes, int max_chunks = 12);

// One function per algorithm family; each returns done[rank].
std::vector<int> expand_ring(Expansion& x);          // AllReduce, AllGather, ReduceScatter
std::vector<int> expand_ring_chain(Expansion& x);    // Broadcast (root -> all), Reduce (all -> root)
/// Parent of node `v` in the binary tree over `nodes` nodes (heap order, node 0 the root), or in
/// its mirror (node -> nodes-1-node) for NCCL's second tree; -1 for the root.
int tree_parent_node(int v, int nodes, bool mirror);

std::vector<int> expand_tree_allreduce(Expansion& x);
std::vector<int> expand_nvls_allreduce(Expansion& x);  // NVLS (one node) and NVLSTree (nodes)
std::vector<int> expand_direct(Expansion& x);        // AllToAll, SendRecv, Gather, Scatter

}  // namespace dtsim
