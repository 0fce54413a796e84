// Shared state of one collective's expansion into tasks: the layout, the chosen (algorithm,
// protocol), and helpers that add transfers whose wire bytes include the protocol's and the link
// class's overhead, so that the engine's max-min sharing sees the real load on each link.
#pragma once

#include "sim/collectives/collective.hpp"
#include "sim/collectives/comm_layout.hpp"

#include <string>
#include <unordered_map>
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
  /// How many NCCL channels ring `k` of the layout stands for (1 for the textbook ring).
  double channels_of_ring(std::size_t k) const
  {
    return layout.ring_weight.size() == layout.rings.size() && k < layout.ring_weight.size() ? layout.ring_weight[k] : 1.0;
  }

  /// Adds a transfer of `payload` bytes between two devices; `extra_efficiency` multiplies the
  /// route's efficiency (e.g. NVLS).
  int transfer(int src_device, int dst_device, double payload, const std::string& what, std::vector<int> after,
               double extra_efficiency = 1.0);
  /// A zero-length marker on `rank` after `after` (joins several tasks into one).
  int join(int rank, std::vector<int> after, const std::string& what);

  /// One hop of a pipeline, as NCCL streams it in small chunks through every hop at once: the
  /// first chunk (`head`) leaves once the first chunk of the hop before has arrived (`head_after`),
  /// the bulk follows it at whatever rate the links give, and the last chunk (`tail`) leaves once
  /// the bulk is out and the last chunk of the hop before has arrived (`tail_after`). A chain of D
  /// such hops at rate R moves S bytes in (S + (D-1) chunk) / R, the pipeline's fill and drain,
  /// with three transfers per hop instead of one per chunk (`chunk`: see stream_chunk).
  struct Stream {
    int head = -1, tail = -1;
  };
  Stream stream(int src_device, int dst_device, double payload, double chunk, std::vector<int> head_after,
                std::vector<int> tail_after, const std::string& what, double extra_efficiency = 1.0);
  /// Joins the heads and the tails of several streams (a reduction needs every input's chunk).
  Stream join(int rank, const std::vector<Stream>& streams, const std::string& what);

  /// Payload fraction of the wire bytes: LL 0.5, LL128 0.92, Simple 1, lowered where NCCL caps the
  /// protocol's throughput below what the links give (set by the dispatcher).
  double protocol_factor = 1.0;
  /// The start-up charges NCCL's per-hop latencies, which include the links' own: transfers then
  /// do not pay their route's latency again (false for the textbook collectives).
  bool charges_hop_latency = true;
  /// Merge consecutive ring steps into at most 16 super-steps (off for the textbook ring).
  bool merge_ring_steps = true;

  /// Per rank: the task its first transfer waits for (the start-up latency, after start_after).
  std::vector<int> start;

private:
  int one_flow(int src_device, int dst_device, double payload, const TaskText& name, const std::vector<int>& after,
               double extra_efficiency, int sender_joined);
  /// The task name of `what` ("tree 3 up"): the call's label and `what`, interned (TaskText). The
  /// names of a collective repeat (every hop of a channel's tree has the same): the first
  /// kNamesKept are kept here, so that a repeat costs a look-up in a small table rather than a
  /// concatenation and a look-up among every name of the plan.
  TaskText name_of(const std::string& what);
  static constexpr std::size_t kNamesKept = 4096;
  std::unordered_map<std::string, TaskText> names_;
  /// The start-up task of the rank on `device` (its join), -1 when the device is not a rank.
  int sender_join(int device) const;
  /// The NIC a GPU's channel uses: the one beside it (local index scaled to the NIC count).
  int nic_of(int gpu) const;
  struct RouteEfficiency {
    int src = -1, dst = -1;
    double of = 1.0;  ///< route_efficiency of the pair
  } efficiency_;  ///< the pair asked for last
  std::unordered_map<int, int> rank_of_device_;  ///< a rank's device -> the rank
};

/// Stretches the transfers added since task `first` by one factor so that, alone on the machine,
/// they take at least `seconds`: the busiest link direction's wire bytes over its bandwidth is
/// taken as their uncontended time (they run at once, as a pipelined collective's hops do). Models
/// a protocol whose pace is set by its own mechanics (flag polling, per-hop overheads) rather than
/// by the links; stretched flows still load the links they cross, so contention is kept.
void pace_transfers(TaskGraph& graph, const Topology& topology, int first, double seconds);

/// Payload fraction of a protocol's wire bytes: LL 0.5, LL128 0.92 (tuning.cc), Simple 1.
double protocol_efficiency(NcclProto p);

/// NCCL's chunk per channel (payload bytes) for an algorithm and protocol: Simple 512 KiB (one
/// 4 MiB / 8 buffer step; Tree and the Broadcast/Reduce chain), NVLS 128 KiB (nvlsChunkSize),
/// LL128 576,000 B and LL 32 KiB (one step of their buffers).
double nccl_chunk_bytes(NcclAlgo algo, NcclProto proto);

/// NCCL_STEPS: buffer slots per connection, each holding one chunk.
constexpr double kNcclSteps = 8;

/// The pipeline grain of a stream of `payload` bytes that stands for `channels` NCCL channels: a
/// connection's whole buffer (NCCL_STEPS chunks per channel), since under NCCL's flow control a
/// stage can run up to that far behind the one before it; shrunk to payload / 8 for small payloads
/// (NCCL halves its chunk until enough of them are in flight).
double stream_chunk(double payload, double per_channel_chunk, double channels);

/// The pipeline grain of a hop of `algo`/`proto` carrying `payload` bytes for `channels` channels:
/// Simple (and NVLS) as stream_chunk of NCCL's chunk; LL and LL128 put a flag in every line, so a
/// hop passes data on line by line and its pipeline fills in no more than its per-hop latency
/// (already in the start-up): a grain of payload / kLineGrainChunks stands for that.
double pipeline_chunk(NcclAlgo algo, NcclProto proto, double payload, double channels);
constexpr double kLineGrainChunks = 1024;

// One function per algorithm family; each returns done[rank].
std::vector<int> expand_ring(Expansion& x);          // AllReduce, AllGather, ReduceScatter
std::vector<int> expand_ring_chain(Expansion& x);    // Broadcast (root -> all), Reduce (all -> root)
/// Parent of node `v` in NCCL's binary tree over `nodes` nodes (node 0 the root, one child), or in
/// NCCL's second tree (mirrored for an even count, shifted by one for an odd count); -1 for a root.
int tree_parent_node(int v, int nodes, bool mirror);
/// One of those trees as children lists and a parents-before-children order (BFS from the root).
struct NodeTree {
  std::vector<std::vector<int>> children;
  std::vector<int> order;
};
NodeTree node_tree(int nodes, bool mirror);

std::vector<int> expand_tree_allreduce(Expansion& x);
std::vector<int> expand_nvls_allreduce(Expansion& x);  // NVLS (one node) and NVLSTree (nodes)
std::vector<int> expand_direct(Expansion& x);        // AllToAll, SendRecv, Gather, Scatter

}  // namespace dtsim
