// NVLink SHARP AllReduce on NVSwitch gen 3 (Hopper+): each GPU owns 1/ppn of the buffer; the
// switch reads every GPU's copy of that slice and returns the sum (multimem.ld_reduce: GPU -> switch
// carries S, switch -> GPU carries S/ppn), then the owner multicasts the result (GPU -> switch
// S/ppn, switch -> every GPU S). On several nodes (NVLSTree) the reduced slices are exchanged
// between the GPUs of equal local index over a double binary tree of nodes before the multicast.
// Every hop is a stream of NCCL's chunks (Expansion::stream); the transfers through the switch
// carry NCCL's NVLS efficiency on top of the NVLink one.
#include "sim/collectives/expansion.hpp"

#include <algorithm>

namespace dtsim {


std::vector<int> expand_nvls_allreduce(Expansion& x)
{
  using Stream = Expansion::Stream;
  const int n = x.n();
  const auto& by_node = x.layout.by_node;
  const int nodes = static_cast<int>(by_node.size());
  const int ppn = x.layout.ppn;
  // On several nodes NCCL models NVLSTree's bus bandwidth as the NVLS bus bandwidth of one node
  // (tuning.cc: bw = min(intraBw, interBw), both bus rates), so its algorithm bandwidth is lower by
  // the ratio of the bus factors, 2(ppn-1)/ppn over 2(n-1)/n (0.93 at 2 x 8 GPUs). Measured H100
  // tables agree: 467-469 GB/s busbw at 2 x 8 (nccl-tests#309) against 475 on one node (#290).
  const double bus_ratio = nodes > 1 ? (1.0 - 1.0 / ppn) / (1.0 - 1.0 / n) : 1.0;
  const double eff = x.params.nvls_efficiency * bus_ratio;
  const double channels = std::max(1, x.layout.system.nvls_channels);
  const double per_channel_chunk = nccl_chunk_bytes(NcclAlgo::Nvls, NcclProto::Simple);
  // Into the switch: every GPU's whole buffer (ld_reduce) and later its reduced slice (multicast
  // store), one stream of (1 + 1/ppn) x S. A GPU's slice is reduced once every GPU's data is in.
  const double io_bytes = x.call.bytes * (1.0 + 1.0 / static_cast<double>(ppn));
  const double io_chunk = stream_chunk(io_bytes, per_channel_chunk, channels);
  std::vector<Stream> slice_final(static_cast<std::size_t>(n));
  for (int v = 0; v < nodes; ++v) {
    const auto& members = by_node[static_cast<std::size_t>(v)];
    const int sw = x.layout.nvswitch_of_node[static_cast<std::size_t>(v)];
    std::vector<Stream> ins;
    for (int r : members)
      ins.push_back(x.stream(x.device(r), sw, io_bytes, io_chunk, {x.start[static_cast<std::size_t>(r)]}, {}, "nvls in",
                             eff));
    const Stream reduced = x.join(members[0], ins, "nvls reduced");
    for (int r : members)
      slice_final[static_cast<std::size_t>(r)] = reduced;
  }
  // Across nodes: GPUs of equal local index reduce and broadcast their slice over two trees, each
  // carrying half of it.
  if (nodes > 1) {
    const double half = x.call.bytes / ppn / 2;
    const double tree_chunk = stream_chunk(half, per_channel_chunk, channels / ppn / 2);
    const std::vector<Stream> slice_ready = slice_final;
    for (int g = 0; g < ppn; ++g) {
      auto gpu = [&](int v) { return by_node[static_cast<std::size_t>(v)][static_cast<std::size_t>(g)]; };
      std::vector<std::vector<Stream>> final_parts(static_cast<std::size_t>(nodes));
      for (int t = 0; t < 2; ++t) {
        const NodeTree tree = node_tree(nodes, t == 1);
        const auto& children = tree.children;
        const auto& order = tree.order;
        std::vector<Stream> up(static_cast<std::size_t>(nodes));
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
          const int v = *it;
          std::vector<Stream> in{slice_ready[static_cast<std::size_t>(gpu(v))]};
          for (int c : children[static_cast<std::size_t>(v)])
            in.push_back(up[static_cast<std::size_t>(c)]);
          const Stream ready = x.join(gpu(v), in, "nvlstree reduced");
          const int p = tree_parent_node(v, nodes, t == 1);
          up[static_cast<std::size_t>(v)] =
              p < 0 ? ready
                    : x.stream(x.device(gpu(v)), x.device(gpu(p)), half, tree_chunk, {ready.head}, {ready.tail},
                               "nvlstree up");
        }
        std::vector<Stream> down(static_cast<std::size_t>(nodes));
        for (int v : order) {
          const int p = tree_parent_node(v, nodes, t == 1);
          down[static_cast<std::size_t>(v)] =
              p < 0 ? up[static_cast<std::size_t>(v)]
                    : x.stream(x.device(gpu(p)), x.device(gpu(v)), half, tree_chunk,
                               {down[static_cast<std::size_t>(p)].head}, {down[static_cast<std::size_t>(p)].tail},
                               "nvlstree down");
          final_parts[static_cast<std::size_t>(v)].push_back(down[static_cast<std::size_t>(v)]);
        }
      }
      for (int v = 0; v < nodes; ++v)
        slice_final[static_cast<std::size_t>(gpu(v))] =
            x.join(gpu(v), final_parts[static_cast<std::size_t>(v)], "nvlstree slice done");
    }
  }
  // Out of the switch: the reduced slice (ld_reduce result) and every GPU's multicast slice,
  // (1/ppn + 1) x S, once the slices are final (after the inter-node trees on several nodes).
  std::vector<int> done(static_cast<std::size_t>(n));
  for (int v = 0; v < nodes; ++v) {
    const auto& members = by_node[static_cast<std::size_t>(v)];
    const int sw = x.layout.nvswitch_of_node[static_cast<std::size_t>(v)];
    std::vector<Stream> slices;
    for (int r : members)
      slices.push_back(slice_final[static_cast<std::size_t>(r)]);
    const Stream all = x.join(members[0], slices, "nvls slices final");
    for (int r : members)
      done[static_cast<std::size_t>(r)] =
          x.stream(sw, x.device(r), io_bytes, io_chunk, {all.head}, {all.tail}, "nvls out", eff).tail;
  }
  return done;
}

}  // namespace dtsim
