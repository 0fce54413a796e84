// NVLink SHARP AllReduce on NVSwitch gen 3 (Hopper+): each GPU owns 1/ppn of the buffer; the
// switch reads every GPU's copy of that slice and returns the sum (multimem.ld_reduce: GPU -> switch
// carries S, switch -> GPU carries S/ppn), then the owner multicasts the result (GPU -> switch
// S/ppn, switch -> every GPU S). On several nodes (NVLSTree) the reduced slices are exchanged
// between the GPUs of equal local index over a double binary tree of nodes before the multicast.
// Pipelined in chunks; the transfers carry NCCL's NVLS efficiency on top of the NVLink one.
#include "sim/collectives/expansion.hpp"

#include <fmt/format.h>

namespace dtsim {


std::vector<int> expand_nvls_allreduce(Expansion& x)
{
  const int n = x.n();
  const auto& by_node = x.layout.by_node;
  const int nodes = static_cast<int>(by_node.size());
  const double eff = x.params.nvls_efficiency;
  // Draining the pipeline costs about one chunk: many chunks on one node (16 flows each), fewer
  // when the inter-node trees multiply the flows.
  const auto sizes = pipeline_chunk_sizes(x.call.bytes, 1024.0 * 1024, nodes == 1 ? 64 : 16);
  const int chunks = static_cast<int>(sizes.size());
  std::vector<int> up_prev(static_cast<std::size_t>(n), -1), down_prev(static_cast<std::size_t>(n), -1);
  for (int j = 0; j < chunks; ++j) {
    const double chunk = sizes[static_cast<std::size_t>(j)];
    // Into the switch: every GPU's whole chunk (ld_reduce) and later its reduced slice (multicast
    // store), one flow of (1 + 1/ppn) x chunk. A GPU's slice is reduced once every GPU's chunk is in.
    std::vector<int> slice_ready(static_cast<std::size_t>(n), -1);
    for (int v = 0; v < nodes; ++v) {
      const auto& members = by_node[static_cast<std::size_t>(v)];
      const int sw = x.layout.nvswitch_of_node[static_cast<std::size_t>(v)];
      const double in_bytes = chunk * (1.0 + 1.0 / static_cast<double>(members.size()));
      std::vector<int> ups;
      for (int r : members) {
        std::vector<int> deps{x.start[static_cast<std::size_t>(r)]};
        if (up_prev[static_cast<std::size_t>(r)] >= 0)
          deps.push_back(up_prev[static_cast<std::size_t>(r)]);
        ups.push_back(x.transfer(x.device(r), sw, in_bytes, fmt::format("nvls chunk {} in", j + 1), deps, eff));
        up_prev[static_cast<std::size_t>(r)] = ups.back();
      }
      const int reduced = x.join(members[0], ups, fmt::format("nvls chunk {} reduced", j + 1));
      for (int r : members)
        slice_ready[static_cast<std::size_t>(r)] = reduced;
    }
    // Across nodes: GPUs of equal local index reduce and broadcast their slice over two trees.
    std::vector<int> slice_final = slice_ready;
    if (nodes > 1) {
      const int ppn = x.layout.ppn;
      for (int g = 0; g < ppn; ++g) {
        auto gpu = [&](int v) { return by_node[static_cast<std::size_t>(v)][static_cast<std::size_t>(g)]; };
        const double half = chunk / ppn / 2;
        std::vector<std::vector<int>> final_parts(static_cast<std::size_t>(nodes));
        for (int t = 0; t < 2; ++t) {
          std::vector<std::vector<int>> children(static_cast<std::size_t>(nodes));
          int root = 0;
          for (int v = 0; v < nodes; ++v) {
            const int p = tree_parent_node(v, nodes, t == 1);
            if (p < 0)
              root = v;
            else
              children[static_cast<std::size_t>(p)].push_back(v);
          }
          std::vector<int> order{root};
          for (std::size_t i = 0; i < order.size(); ++i)
            for (int c : children[static_cast<std::size_t>(order[i])])
              order.push_back(c);
          std::vector<int> up(static_cast<std::size_t>(nodes), -1);
          for (auto it = order.rbegin(); it != order.rend(); ++it) {
            const int v = *it;
            std::vector<int> deps{slice_ready[static_cast<std::size_t>(gpu(v))]};
            for (int c : children[static_cast<std::size_t>(v)])
              deps.push_back(up[static_cast<std::size_t>(c)]);
            const int p = tree_parent_node(v, nodes, t == 1);
            if (p >= 0)
              up[static_cast<std::size_t>(v)] = x.transfer(x.device(gpu(v)), x.device(gpu(p)), half,
                                                           fmt::format("nvlstree chunk {} up", j + 1), deps);
            else
              up[static_cast<std::size_t>(v)] = x.join(gpu(v), deps, "nvlstree reduced");
          }
          std::vector<int> down(static_cast<std::size_t>(nodes), -1);
          for (int v : order) {
            const int p = tree_parent_node(v, nodes, t == 1);
            down[static_cast<std::size_t>(v)] =
                p < 0 ? up[static_cast<std::size_t>(v)]
                      : x.transfer(x.device(gpu(p)), x.device(gpu(v)), half, fmt::format("nvlstree chunk {} down", j + 1),
                                   {down[static_cast<std::size_t>(p)]});
            final_parts[static_cast<std::size_t>(v)].push_back(down[static_cast<std::size_t>(v)]);
          }
        }
        for (int v = 0; v < nodes; ++v)
          slice_final[static_cast<std::size_t>(gpu(v))] =
              x.join(gpu(v), final_parts[static_cast<std::size_t>(v)], "nvlstree slice done");
      }
    }
    // Out of the switch: the reduced slice (ld_reduce result) and every GPU's multicast slice,
    // (1/ppn + 1) x chunk, once the slices are final (after the inter-node trees on several nodes).
    for (int v = 0; v < nodes; ++v) {
      const auto& members = by_node[static_cast<std::size_t>(v)];
      const int sw = x.layout.nvswitch_of_node[static_cast<std::size_t>(v)];
      const double out_bytes = chunk * (1.0 + 1.0 / static_cast<double>(members.size()));
      std::vector<int> finals;
      for (int r : members)
        finals.push_back(slice_final[static_cast<std::size_t>(r)]);
      for (int r : members) {
        std::vector<int> deps = finals;
        if (down_prev[static_cast<std::size_t>(r)] >= 0)
          deps.push_back(down_prev[static_cast<std::size_t>(r)]);
        down_prev[static_cast<std::size_t>(r)] =
            x.transfer(sw, x.device(r), out_bytes, fmt::format("nvls chunk {} out", j + 1), deps, eff);
      }
    }
  }
  std::vector<int> done(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    done[static_cast<std::size_t>(r)] = down_prev[static_cast<std::size_t>(r)];
  return done;
}

}  // namespace dtsim
