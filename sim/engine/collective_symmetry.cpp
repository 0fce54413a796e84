#include "sim/engine/collective_symmetry.hpp"

#include "sim/engine/task_shapes.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>

namespace dtsim {

namespace {

constexpr int kNotRotated = -2;  ///< a device the rotation does not map (its kind does not divide)

/// A node's devices by kind, each kind's in local-index order.
std::map<DeviceKind, std::vector<int>> devices_by_kind(const Topology& topology, int node)
{
  const auto& devices = topology.devices();
  std::map<DeviceKind, std::vector<int>> out;
  for (int d : topology.devices_of_node(node))
    out[devices[static_cast<std::size_t>(d)].kind].push_back(d);
  for (auto& [kind, list] : out)
    std::stable_sort(list.begin(), list.end(), [&](int a, int b) {
      return devices[static_cast<std::size_t>(a)].local_index < devices[static_cast<std::size_t>(b)].local_index;
    });
  return out;
}

/// The rotation of every node's devices by `shift` GPU positions: a node's devices of one kind, by
/// local index, turn by shift x (their count) / (the node's GPUs); a kind with one device stays.
/// Fabric devices (no node) stay.
std::vector<int> rotation_of(const Topology& topology, int shift)
{
  std::vector<int> image(topology.devices().size());
  std::iota(image.begin(), image.end(), 0);
  for (int node = 0; node < topology.nodes; ++node) {
    auto by_kind = devices_by_kind(topology, node);
    const auto gpus = static_cast<int>(by_kind[DeviceKind::Gpu].size());
    for (const auto& [kind, list] : by_kind) {
      const auto count = static_cast<int>(list.size());
      if (count <= 1)
        continue;
      const bool divides = gpus > 0 && (shift * count) % gpus == 0;
      const int turn = divides ? shift * count / gpus : 0;
      for (int i = 0; i < count; ++i)
        image[static_cast<std::size_t>(list[static_cast<std::size_t>(i)])] =
            divides ? list[static_cast<std::size_t>((i + turn) % count)] : kNotRotated;
    }
  }
  return image;
}

/// The mirror of the nodes `first` .. `last` (node v to first + last - v; each device to the one of
/// its kind at its position there, by local index), as NCCL's second tree mirrors its first over
/// an even node count (ncclGetDtree). A device on no node stays; one on a node outside the span,
/// or without a counterpart, is not mapped.
std::vector<int> node_mirror(const Topology& topology, int first, int last)
{
  const auto& devices = topology.devices();
  std::vector<int> image(devices.size(), kNotRotated);
  for (std::size_t d = 0; d < devices.size(); ++d)
    if (devices[d].node < 0)
      image[d] = static_cast<int>(d);
  for (int node = first; node <= last; ++node) {
    const auto here = devices_by_kind(topology, node), there = devices_by_kind(topology, first + last - node);
    for (const auto& [kind, list] : here) {
      const auto it = there.find(kind);
      if (it == there.end() || it->second.size() != list.size())
        continue;
      for (std::size_t i = 0; i < list.size(); ++i)
        image[static_cast<std::size_t>(list[i])] = it->second[i];
    }
  }
  return image;
}

/// What a device does in a collective: 1 sends, 2 receives, 3 both, 0 neither.
const char* role_name(char role)
{
  switch (role) {
    case 1: return "only sends";
    case 2: return "only receives";
    case 3: return "sends and receives";
    default: return "neither";
  }
}

/// A symmetry maps each device onto one with the same role (the task-by-task test implies it): this
/// one-pass test turns down what cannot fold, a rooted collective whose root receives nothing,
/// before every task's shape is worked out. `role` per device (role_name); returns why not ("" when
/// it holds).
std::string roles_kept(const Topology& topology, const std::vector<char>& role, const std::vector<int>& image)
{
  for (std::size_t d = 0; d < role.size(); ++d) {
    if (!role[d])
      continue;
    const int m = image[d];
    if (m == kNotRotated)
      return fmt::format("{} is on a device the rotation does not map", topology.device(static_cast<int>(d)).name);
    if (role[static_cast<std::size_t>(m)] != role[d])
      return fmt::format("{} {} and its image {} {}", topology.device(static_cast<int>(d)).name, role_name(role[d]),
                         topology.device(m).name, role_name(role[static_cast<std::size_t>(m)]));
  }
  return {};
}

/// The task permutation `tau` (offsets) that the device rotation `image` induces on the range: each
/// task's image is a task of the same shape on the rotated devices, waiting on the images of what
/// it waits on (an alias maps with the task it is an alias of, and stays put itself). Returns why
/// not ("" when every task has one).
std::string task_image(const TaskGraph& g, const CollectiveRange& r, const Shapes& shapes, const std::vector<int>& image,
                       std::vector<int>& tau)
{
  const int n = r.end - r.first;
  tau.assign(static_cast<std::size_t>(n), -1);
  std::vector<char> taken(static_cast<std::size_t>(n), 0);
  bool unmapped = false;
  auto device = [&](int d) {
    const int m = image[static_cast<std::size_t>(d)];
    unmapped = unmapped || m == kNotRotated;
    return m;
  };
  auto dep = [&](int offset) {
    return offset >= 0 ? tau[static_cast<std::size_t>(shapes.alias[static_cast<std::size_t>(offset)])] : -1;
  };
  for (int i = 0; i < n; ++i) {
    const Task& t = g[r.first + i];
    if (shapes.alias[static_cast<std::size_t>(i)] != i) {
      tau[static_cast<std::size_t>(i)] = i;
      continue;
    }
    if (std::any_of(t.after.begin(), t.after.end(), [&](int d) { return d >= r.first + i; }))
      return fmt::format("'{}' waits on a later task", t.name);
    const Shape want = shape_of(t, r, device, dep);
    if (unmapped)
      return fmt::format("'{}' is on a device the rotation does not map", t.name);
    // Among tasks of that shape, the one on the rotated device first: timers of the same shape on
    // several ranks (their start-ups) then map as the ranks do.
    const int on = t.device >= 0 ? image[static_cast<std::size_t>(t.device)] : -1;
    int found = -1;
    shapes.each_of_hash(hash_of(want), [&](int j) {
      if (!taken[static_cast<std::size_t>(j)] && shapes.of[static_cast<std::size_t>(j)] == want &&
          (found < 0 || g[r.first + j].device == on)) {
        found = j;
        return g[r.first + j].device == on;
      }
      return false;
    });
    if (found < 0)
      return fmt::format("'{}' has no image", t.name);
    tau[static_cast<std::size_t>(i)] = found;
    taken[static_cast<std::size_t>(found)] = 1;
  }
  return {};
}

/// Cycles of a permutation of 0..n-1: per element, its cycle's first element and the cycle's length.
void cycles_of(const std::vector<int>& perm, std::vector<int>& first, std::vector<int>& length)
{
  const std::size_t n = perm.size();
  first.assign(n, -1);
  length.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (first[i] >= 0)
      continue;
    int len = 0;
    for (auto j = i; first[j] < 0; j = static_cast<std::size_t>(perm[j])) {
      first[j] = static_cast<int>(i);
      ++len;
    }
    for (auto j = i; length[j] == 0; j = static_cast<std::size_t>(perm[j]))
      length[j] = len;
  }
}

/// Folds `range` by the task permutation `tau`; "" when it holds on every route.
std::string fold_by(const Topology& topology, const TaskGraph& g, const CollectiveRange& r, const Shapes& shapes,
                    const std::vector<int>& tau, CollectiveFold& fold)
{
  const int n = r.end - r.first;
  std::vector<int> first, length;
  cycles_of(tau, first, length);
  // The rotation on directed links, from every transfer's route and its image's (-1: not known).
  const std::size_t directed = 2 * topology.links().size();
  std::vector<int> pi(directed, -1), inverse(directed, -1);
  std::vector<int> mapped;  // the directed links pi maps, in the order first met
  for (int i = 0; i < n; ++i) {
    const Task& t = g[r.first + i];
    if (shapes.alias[static_cast<std::size_t>(i)] != i || t.kind != TaskKind::Transfer || t.src == t.dst)
      continue;
    if (t.rate_cap > 0)  // the engine applies a cap through its route's slowest link, which folding slows
      return fmt::format("'{}' has a rate cap", t.name);
    const Task& u = g[r.first + tau[static_cast<std::size_t>(i)]];
    const Route& a = topology.route(t.src, t.dst);
    const Route& b = topology.route(u.src, u.dst);
    if (a.size() != b.size())
      return fmt::format("'{}' and its image take routes of {} and {} links", t.name, a.size(), b.size());
    for (std::size_t h = 0; h < a.size(); ++h) {
      const Link& la = topology.link(a[h].link);
      const Link& lb = topology.link(b[h].link);
      if (la.bandwidth != lb.bandwidth || la.latency != lb.latency)
        return fmt::format("links {} and {} differ", la.name, lb.name);
      const int ka = directed_link(a[h]), kb = directed_link(b[h]);
      int& to = pi[static_cast<std::size_t>(ka)];
      int& from = inverse[static_cast<std::size_t>(kb)];
      if (to < 0 && from < 0) {
        to = kb;
        from = ka;
        mapped.push_back(ka);
      }
      if (to != kb || from != ka)
        return fmt::format("link {} maps to two links", la.name);
    }
  }
  // Orbits of directed links (the permutation is closed: every image is a route's link too).
  std::unordered_map<int, std::pair<int, int>> orbit;  // key -> (representative key, orbit size)
  for (const int key : mapped) {
    if (orbit.count(key))
      continue;
    std::vector<int> members{key};
    for (int k = pi[static_cast<std::size_t>(key)]; k != key; k = pi[static_cast<std::size_t>(k)]) {
      if (k < 0)
        throw std::logic_error("fold_by: the rotation of links is not closed");
      members.push_back(k);
    }
    const int rep = *std::min_element(members.begin(), members.end());
    for (int k : members)
      orbit[k] = {rep, static_cast<int>(members.size())};
  }
  // A task of the orbit's first class runs; a timer there takes its class's span; a task of another
  // class takes the span of the first task of its orbit's first class. Every transfer of the
  // first class is a flow of its own.
  fold.representative.resize(static_cast<std::size_t>(n));
  fold.largest_orbit = 1;
  for (int i = 0; i < n; ++i) {
    const int cls = shapes.alias[static_cast<std::size_t>(i)];
    const int lead = first[static_cast<std::size_t>(cls)];
    const bool flow = g[r.first + i].kind != TaskKind::Delay && !is_timer(g[r.first + i]);
    fold.representative[static_cast<std::size_t>(i)] = lead == cls && flow ? i : lead;
    fold.largest_orbit = std::max(fold.largest_orbit, length[static_cast<std::size_t>(cls)]);
  }
  // Flows per folded link: m_f / |O| for each flow f that runs, the same for all on one orbit.
  for (int i = 0; i < n; ++i) {
    const Task& t = g[r.first + i];
    if (fold.representative[static_cast<std::size_t>(i)] != i || t.kind != TaskKind::Transfer || t.src == t.dst)
      continue;
    std::vector<int> crossed;
    for (const dtsim::Hop& h : topology.route(t.src, t.dst)) {
      const auto [rep, size] = orbit.at(directed_link(h));
      if (std::find(crossed.begin(), crossed.end(), rep) != crossed.end())
        return fmt::format("'{}' crosses two links of one orbit", t.name);
      crossed.push_back(rep);
      const int m = length[static_cast<std::size_t>(shapes.alias[static_cast<std::size_t>(i)])];
      if (m % size != 0)
        return fmt::format("'{}' stands for {} flows on {} links", t.name, m, size);
      const auto [it, fresh] = fold.links.emplace(directed_link(h), CollectiveFold::FoldedLink{rep, m / size});
      if (it->second.flows != m / size)
        return fmt::format("link {} carries representatives of {} and {} flows", topology.link(h.link).name,
                           it->second.flows, m / size);
    }
  }
  // Every link of an orbit has the same flows (checked per link above; the orbit's must agree).
  std::unordered_map<int, int> flows_of_orbit;
  for (const auto& [key, folded] : fold.links) {
    const auto [it, fresh] = flows_of_orbit.emplace(folded.key, folded.flows);
    if (it->second != folded.flows)
      return fmt::format("an orbit of links carries representatives of {} and {} flows", it->second, folded.flows);
  }
  return {};
}

}  // namespace

int CollectiveFold::representatives() const
{
  int count = 0;
  for (std::size_t i = 0; i < representative.size(); ++i)
    count += representative[i] == static_cast<int>(i);
  return count;
}

CollectiveFold fold_collective(const Topology& topology, const TaskGraph& g, const CollectiveRange& r)
{
  const int n = r.end - r.first;
  CollectiveFold out;
  out.representative.resize(static_cast<std::size_t>(n));
  std::iota(out.representative.begin(), out.representative.end(), 0);
  if (n == 0)
    return out;
  // The nodes the collective's transfers touch (a mirror maps them onto one another), and which
  // devices send and which receive.
  int first_node = std::numeric_limits<int>::max(), last_node = -1;
  std::vector<char> role(topology.devices().size(), 0);  // per device (role_name)
  for (int id = r.first; id < r.end; ++id) {
    const Task& t = g[id];
    if (t.kind == TaskKind::Transfer && t.src >= 0 && t.dst >= 0) {
      role[static_cast<std::size_t>(t.src)] |= 1;
      role[static_cast<std::size_t>(t.dst)] |= 2;
    }
    for (const int d : {t.src, t.dst})
      if (d >= 0 && topology.device(d).node >= 0) {
        first_node = std::min(first_node, topology.device(d).node);
        last_node = std::max(last_node, topology.device(d).node);
      }
  }
  std::optional<Shapes> shapes;  // worked out for the first rotation that passes roles_kept
  const std::vector<int> mirror_image =
      last_node > first_node ? node_mirror(topology, first_node, last_node) : std::vector<int>{};
  std::vector<std::string> why;
  const int gpus = topology.gpus_per_node;
  // The smallest rotation first; where it fails, the same rotation with the nodes mirrored (the
  // channels of a double binary tree alternate between a tree and its mirror: one generator of
  // both, rotation by one position and mirror, folds all eight channels of a node where rotation
  // alone folds four).
  for (int shift = 1; shift < gpus; ++shift) {
    if (gpus % shift != 0)
      continue;
    for (const bool mirror : {false, true}) {
      if (mirror && last_node <= first_node)
        continue;
      std::vector<int> image = rotation_of(topology, shift);
      if (mirror)
        for (int& m : image)
          m = m == kNotRotated ? m : mirror_image[static_cast<std::size_t>(m)];
      std::vector<int> tau;
      std::string broken = roles_kept(topology, role, image);
      if (broken.empty()) {
        if (!shapes)
          shapes = shapes_of(g, r);
        broken = task_image(g, r, *shapes, image, tau);
      }
      CollectiveFold fold;
      if (broken.empty())
        broken = fold_by(topology, g, r, *shapes, tau, fold);
      if (broken.empty() && fold.largest_orbit == 1)
        broken = "every task is its own image";
      if (broken.empty()) {
        fold.rotation = shift;
        fold.mirrored = mirror;
        return fold;
      }
      why.push_back(fmt::format("rotation by {}{}: {}", shift, mirror ? " and mirror" : "", broken));
    }
  }
  out.why_not = fmt::format("{}", fmt::join(why, "; "));
  return out;
}

bool fold_carries_over(const TaskGraph& g, const CollectiveRange& a, const CollectiveRange& b)
{
  const int n = a.end - a.first;
  if (b.end - b.first != n)
    return false;
  auto offset = [](const CollectiveRange& r, int id) { return id >= r.first ? id - r.first : -1; };
  // (seconds, bytes) of `a` <-> of `b`, both ways: a bijection between the values that occur.
  std::map<std::pair<double, double>, std::pair<double, double>> to_b, to_a;
  for (int i = 0; i < n; ++i) {
    const Task& x = g[a.first + i];
    const Task& y = g[b.first + i];
    if (x.kind != y.kind || is_timer(x) != is_timer(y) || x.device != y.device || x.src != y.src || x.dst != y.dst ||
        x.link_latency != y.link_latency || x.rate_cap != y.rate_cap ||
        (x.sender_joined < 0) != (y.sender_joined < 0) ||
        (x.sender_joined >= 0 && offset(a, x.sender_joined) != offset(b, y.sender_joined)) ||
        x.after.size() != y.after.size())
      return false;
    for (std::size_t k = 0; k < x.after.size(); ++k)
      if (offset(a, x.after[k]) != offset(b, y.after[k]))
        return false;
    const std::pair<double, double> vx{x.seconds, x.bytes}, vy{y.seconds, y.bytes};
    const auto [fwd, fresh_fwd] = to_b.emplace(vx, vy);
    const auto [back, fresh_back] = to_a.emplace(vy, vx);
    if (fwd->second != vy || back->second != vx)
      return false;
  }
  return true;
}

Topology folded_machine(const Topology& topology, const TaskGraph& g, const CollectiveRange& r, const CollectiveFold& fold)
{
  struct FoldedHop {
    int key = -1;   // directed link (2 * link + forward) of the topology
    int flows = 1;  // flows it stands for (1: the link itself)
  };
  std::map<std::pair<int, int>, std::vector<FoldedHop>> routes;  // a route depends on its two devices only
  for (int i = 0; i < r.end - r.first; ++i) {
    const Task& t = g[r.first + i];
    if (fold.representative[static_cast<std::size_t>(i)] != i || t.kind != TaskKind::Transfer || t.src == t.dst)
      continue;
    auto [it, fresh] = routes.try_emplace({t.src, t.dst});
    if (!fresh)
      continue;
    for (const Hop& h : topology.route(t.src, t.dst)) {
      const auto folded = fold.links.find(directed_link(h));
      it->second.push_back(folded == fold.links.end() ? FoldedHop{directed_link(h), 1}
                                                      : FoldedHop{folded->second.key, folded->second.flows});
    }
  }
  Topology machine = topology;
  std::map<std::pair<int, int>, int> added;  // (directed key, flows) -> link of rate / flows
  for (const auto& [pair, route] : routes)
    for (const FoldedHop& h : route) {
      if (h.flows == 1 || added.count({h.key, h.flows}))
        continue;
      const Link& l = topology.link(h.key / 2);
      const bool forward = h.key % 2 == 1;
      added[{h.key, h.flows}] = machine.add_link(fmt::format("{} {} ({} flows)", l.name, forward ? "forward" : "backward", h.flows), l.kind, forward ? l.a : l.b,
                                                 forward ? l.b : l.a, l.bandwidth / h.flows, l.latency, l.lanes);
    }
  for (const auto& [pair, route] : routes) {
    Route pinned;
    for (const FoldedHop& h : route)
      pinned.push_back(h.flows == 1 ? Hop{h.key / 2, h.key % 2 == 1} : Hop{added.at({h.key, h.flows}), true});
    machine.pin_route(pair.first, pair.second, std::move(pinned));
  }
  return machine;
}

}  // namespace dtsim
