// NCCL's Tree AllReduce: inside each node a chain through the local GPUs (the channel's ring order,
// the first GPU talking to the network), across nodes a binary tree; even channels use one tree,
// odd channels its mirror (rank -> nodes-1-rank), so that a node that is a leaf in one tree is
// interior in the other (NCCL's double binary tree). Data is reduced up (chain tail -> head, child
// node -> parent node) and broadcast down, pipelined in chunks: chunk j of a hop waits for chunk j
// of the hop before it and for chunk j-1 of the same hop.
#include "sim/collectives/expansion.hpp"

#include <fmt/format.h>

namespace dtsim {


int tree_parent_node(int v, int nodes, bool mirror)
{
  const int m = mirror ? nodes - 1 - v : v;
  if (m == 0)
    return -1;
  const int p = (m - 1) / 2;
  return mirror ? nodes - 1 - p : p;
}

std::vector<int> expand_tree_allreduce(Expansion& x)
{
  const int n = x.n();
  const int nodes = static_cast<int>(x.layout.by_node.size());
  const auto& rings = x.layout.rings;
  const double ring_bytes = x.call.bytes / static_cast<double>(rings.size());
  const auto sizes = pipeline_chunk_sizes(ring_bytes, 512.0 * 1024);
  const int chunks = static_cast<int>(sizes.size());
  std::vector<std::vector<int>> finals(static_cast<std::size_t>(n));
  auto dep_or_start = [&](int task, int rank) { return task >= 0 ? task : x.start[static_cast<std::size_t>(rank)]; };

  for (std::size_t k = 0; k < rings.size(); ++k) {
    const bool mirror = k % 2 == 1;
    std::vector<std::vector<int>> chain(static_cast<std::size_t>(nodes));
    for (int r : rings[k])
      chain[static_cast<std::size_t>(x.layout.node_of_rank[static_cast<std::size_t>(r)])].push_back(r);
    std::vector<std::vector<int>> children(static_cast<std::size_t>(nodes));
    int root = 0;
    for (int v = 0; v < nodes; ++v) {
      const int p = tree_parent_node(v, nodes, mirror);
      if (p < 0)
        root = v;
      else
        children[static_cast<std::size_t>(p)].push_back(v);
    }
    // Per node: previous chunk's tasks, for in-order pipelining on each connection.
    std::vector<std::vector<int>> up_prev(static_cast<std::size_t>(nodes)), down_prev(static_cast<std::size_t>(nodes));
    std::vector<int> net_up_prev(static_cast<std::size_t>(nodes), -1), net_down_prev(static_cast<std::size_t>(nodes), -1);
    for (int v = 0; v < nodes; ++v) {
      up_prev[static_cast<std::size_t>(v)].assign(chain[static_cast<std::size_t>(v)].size(), -1);
      down_prev[static_cast<std::size_t>(v)].assign(chain[static_cast<std::size_t>(v)].size(), -1);
    }
    // Nodes in an order where children come before parents (reverse BFS from the root).
    std::vector<int> order{root};
    for (std::size_t i = 0; i < order.size(); ++i)
      for (int c : children[static_cast<std::size_t>(order[i])])
        order.push_back(c);

    for (int j = 0; j < chunks; ++j) {
      const double chunk = sizes[static_cast<std::size_t>(j)];
      std::vector<int> reduced_at_head(static_cast<std::size_t>(nodes), -1);  // chain reduce done
      std::vector<int> net_up(static_cast<std::size_t>(nodes), -1);           // head(v) -> head(parent)
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const int v = *it;
        const auto& ch = chain[static_cast<std::size_t>(v)];
        auto& prev = up_prev[static_cast<std::size_t>(v)];
        int last = -1;
        for (int i = static_cast<int>(ch.size()) - 2; i >= 0; --i) {
          const int from = ch[static_cast<std::size_t>(i + 1)];
          std::vector<int> deps{dep_or_start(last, from)};
          if (prev[static_cast<std::size_t>(i)] >= 0)
            deps.push_back(prev[static_cast<std::size_t>(i)]);
          last = x.transfer(x.device(from), x.device(ch[static_cast<std::size_t>(i)]), chunk,
                            fmt::format("tree {} chunk {} reduce", k, j + 1), std::move(deps));
          prev[static_cast<std::size_t>(i)] = last;
        }
        const int head = ch[0];
        std::vector<int> ready{dep_or_start(last, head)};
        for (int c : children[static_cast<std::size_t>(v)])
          ready.push_back(net_up[static_cast<std::size_t>(c)]);
        const int p = tree_parent_node(v, nodes, mirror);
        if (p >= 0) {
          if (net_up_prev[static_cast<std::size_t>(v)] >= 0)
            ready.push_back(net_up_prev[static_cast<std::size_t>(v)]);
          net_up[static_cast<std::size_t>(v)] =
              x.transfer(x.device(head), x.device(chain[static_cast<std::size_t>(p)][0]), chunk,
                         fmt::format("tree {} chunk {} up", k, j + 1), std::move(ready));
          net_up_prev[static_cast<std::size_t>(v)] = net_up[static_cast<std::size_t>(v)];
        } else {
          reduced_at_head[static_cast<std::size_t>(v)] = x.join(head, std::move(ready), "tree reduced");
        }
      }
      std::vector<int> at_head(static_cast<std::size_t>(nodes), -1);
      for (int v : order) {
        const auto& ch = chain[static_cast<std::size_t>(v)];
        const int p = tree_parent_node(v, nodes, mirror);
        if (p < 0) {
          at_head[static_cast<std::size_t>(v)] = reduced_at_head[static_cast<std::size_t>(v)];
        } else {
          std::vector<int> deps{at_head[static_cast<std::size_t>(p)]};
          if (net_down_prev[static_cast<std::size_t>(v)] >= 0)
            deps.push_back(net_down_prev[static_cast<std::size_t>(v)]);
          at_head[static_cast<std::size_t>(v)] = x.transfer(x.device(chain[static_cast<std::size_t>(p)][0]),
                                                            x.device(ch[0]), chunk,
                                                            fmt::format("tree {} chunk {} down", k, j + 1), std::move(deps));
          net_down_prev[static_cast<std::size_t>(v)] = at_head[static_cast<std::size_t>(v)];
        }
        int last = at_head[static_cast<std::size_t>(v)];
        auto& prev = down_prev[static_cast<std::size_t>(v)];
        for (std::size_t i = 0; i + 1 < ch.size(); ++i) {
          std::vector<int> deps{last};
          if (prev[i] >= 0)
            deps.push_back(prev[i]);
          last = x.transfer(x.device(ch[i]), x.device(ch[i + 1]), chunk, fmt::format("tree {} chunk {} bcast", k, j + 1),
                            std::move(deps));
          prev[i] = last;
        }
        if (j + 1 == chunks) {
          finals[static_cast<std::size_t>(ch[0])].push_back(at_head[static_cast<std::size_t>(v)]);
          for (std::size_t i = 0; i + 1 < ch.size(); ++i) {
            finals[static_cast<std::size_t>(ch[i])].push_back(prev[i]);
            finals[static_cast<std::size_t>(ch[i + 1])].push_back(prev[i]);
          }
        }
      }
    }
  }
  std::vector<int> done(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    done[static_cast<std::size_t>(r)] = x.join(r, finals[static_cast<std::size_t>(r)], "done");
  return done;
}

}  // namespace dtsim
