// NCCL's Tree AllReduce: inside each node a chain through the local GPUs (the channel's path,
// the first GPU talking to the network), across nodes a binary tree; even channels use one tree,
// odd channels its mirror (rank -> nodes-1-rank), so that a node that is a leaf in one tree is
// interior in the other (NCCL's double binary tree). Data is reduced up (chain tail -> head, child
// node -> parent node) and broadcast down; every hop is a stream (Expansion::stream) of NCCL's
// chunks, so the reduction and the broadcast run at once, as NCCL's split tree kernels do.
#include "sim/collectives/expansion.hpp"

#include <fmt/format.h>

namespace dtsim {


namespace {

/// NCCL's binary tree over ranks 0..n-1 (trees.cc ncclGetBtree): a rank's parent clears its lowest
/// set bit and sets the next one (or only clears it past the end); rank 0 is the root with one
/// child, so every interior rank has two children and one parent.
int btree_parent(int rank, int n)
{
  if (rank == 0)
    return -1;
  int bit = 1;
  while (bit < n && !(bit & rank))
    bit <<= 1;
  const int up = (rank ^ bit) | (bit << 1);
  return up >= n ? rank ^ bit : up;
}

}  // namespace

NodeTree node_tree(int nodes, bool mirror)
{
  NodeTree t;
  t.children.resize(static_cast<std::size_t>(nodes));
  int root = 0;
  for (int v = 0; v < nodes; ++v) {
    const int p = tree_parent_node(v, nodes, mirror);
    if (p < 0)
      root = v;
    else
      t.children[static_cast<std::size_t>(p)].push_back(v);
  }
  t.order.push_back(root);
  for (std::size_t i = 0; i < t.order.size(); ++i)
    for (int c : t.children[static_cast<std::size_t>(t.order[i])])
      t.order.push_back(c);
  return t;
}

int tree_parent_node(int v, int nodes, bool mirror)
{
  if (!mirror)
    return btree_parent(v, nodes);
  // The second tree (ncclGetDtree): mirrored (rank -> n-1-rank) for an even count, shifted by one
  // for an odd count, so that a rank interior in one tree is a leaf in the other.
  if (nodes % 2 == 0) {
    const int p = btree_parent(nodes - 1 - v, nodes);
    return p < 0 ? -1 : nodes - 1 - p;
  }
  const int p = btree_parent((v - 1 + nodes) % nodes, nodes);
  return p < 0 ? -1 : (p + 1) % nodes;
}

std::vector<int> expand_tree_allreduce(Expansion& x)
{
  const int n = x.n();
  const int nodes = static_cast<int>(x.layout.by_node.size());
  const auto& paths = x.layout.channel_paths;
  const double ring_bytes = x.call.bytes / static_cast<double>(paths.size());
  std::vector<std::vector<int>> finals(static_cast<std::size_t>(n));
  auto start = [&](int rank) { return x.start[static_cast<std::size_t>(rank)]; };

  for (std::size_t k = 0; k < paths.size(); ++k) {
    const bool mirror = k % 2 == 1;
    const double chunk = pipeline_chunk(NcclAlgo::Tree, x.proto, ring_bytes, x.channels_of_ring(k));
    std::vector<std::vector<int>> chain(static_cast<std::size_t>(nodes));
    for (int r : paths[k])
      chain[static_cast<std::size_t>(x.layout.node_of_rank[static_cast<std::size_t>(r)])].push_back(r);
    const NodeTree tree = node_tree(nodes, mirror);
    const auto& children = tree.children;
    const auto& order = tree.order;

    // Reduce: up each node's chain (tail -> head), then from the head to the parent node's head.
    std::vector<Expansion::Stream> net_up(static_cast<std::size_t>(nodes));
    Expansion::Stream reduced;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const int v = *it;
      const auto& ch = chain[static_cast<std::size_t>(v)];
      Expansion::Stream last{start(ch.back()), start(ch.back())};
      for (int i = static_cast<int>(ch.size()) - 2; i >= 0; --i) {
        const int from = ch[static_cast<std::size_t>(i + 1)];
        last = x.stream(x.device(from), x.device(ch[static_cast<std::size_t>(i)]), ring_bytes, chunk,
                        {last.head, start(from)}, {last.tail}, fmt::format("tree {} reduce", k));
      }
      std::vector<Expansion::Stream> in{last, {start(ch[0]), start(ch[0])}};
      for (int c : children[static_cast<std::size_t>(v)])
        in.push_back(net_up[static_cast<std::size_t>(c)]);
      const Expansion::Stream ready = x.join(ch[0], in, fmt::format("tree {} reduced at node head", k));
      const int p = tree_parent_node(v, nodes, mirror);
      if (p >= 0)
        net_up[static_cast<std::size_t>(v)] =
            x.stream(x.device(ch[0]), x.device(chain[static_cast<std::size_t>(p)][0]), ring_bytes, chunk, {ready.head},
                     {ready.tail}, fmt::format("tree {} up", k));
      else
        reduced = ready;
    }
    // Broadcast: from the parent node's head to the head, then down the chain (head -> tail).
    std::vector<Expansion::Stream> at_head(static_cast<std::size_t>(nodes));
    for (int v : order) {
      const auto& ch = chain[static_cast<std::size_t>(v)];
      const int p = tree_parent_node(v, nodes, mirror);
      if (p < 0) {
        at_head[static_cast<std::size_t>(v)] = reduced;
      } else {
        const auto& from = at_head[static_cast<std::size_t>(p)];
        at_head[static_cast<std::size_t>(v)] =
            x.stream(x.device(chain[static_cast<std::size_t>(p)][0]), x.device(ch[0]), ring_bytes, chunk, {from.head},
                     {from.tail}, fmt::format("tree {} down", k));
      }
      Expansion::Stream last = at_head[static_cast<std::size_t>(v)];
      finals[static_cast<std::size_t>(ch[0])].push_back(last.tail);
      for (std::size_t i = 0; i + 1 < ch.size(); ++i) {
        last = x.stream(x.device(ch[i]), x.device(ch[i + 1]), ring_bytes, chunk, {last.head}, {last.tail},
                        fmt::format("tree {} broadcast", k));
        finals[static_cast<std::size_t>(ch[i])].push_back(last.tail);
        finals[static_cast<std::size_t>(ch[i + 1])].push_back(last.tail);
      }
    }
  }
  std::vector<int> done(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    done[static_cast<std::size_t>(r)] = x.join(r, finals[static_cast<std::size_t>(r)], "done");
  return done;
}

}  // namespace dtsim
