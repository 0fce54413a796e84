#include "sim/strategies/zero3_coordinator.hpp"

#include <algorithm>

namespace dtsim {

std::vector<double> partitioned_elements(const Model& model, double threshold)
{
  std::vector<double> out;
  for (const auto& l : model.layers) {
    double n = 0;
    for (const auto t : l.param_tensors)
      if (static_cast<double>(t) > threshold)
        n += static_cast<double>(t);
    out.push_back(n);
  }
  return out;
}

std::vector<double> persistent_tensors(const Model& model, double threshold)
{
  std::vector<double> out;
  for (const auto& l : model.layers)
    for (const auto t : l.param_tensors)
      if (static_cast<double>(t) <= threshold)
        out.push_back(static_cast<double>(t));
  return out;
}

std::vector<bool> kept_to_backward(const Model& model, const std::vector<bool>& recomputed, double distance)
{
  const std::size_t L = model.layers.size();
  std::vector<bool> kept(L, false);
  double forward_after = 0, backward_before = 0;  // elements used after layer i's forward, before its backward
  for (std::size_t i = L; i-- > 0;) {
    const auto p = static_cast<double>(model.layers[i].params());
    kept[i] = p > 0 && forward_after + backward_before < distance;
    forward_after += p;
    backward_before += p * (recomputed[i] ? 2 : 1);
  }
  return kept;
}

std::size_t Stage3Fetches::forward_gathers() const
{
  return static_cast<std::size_t>(std::count(gathered_for.begin(), gathered_for.begin() + static_cast<std::ptrdiff_t>(forward_uses), true));
}

std::size_t Stage3Fetches::backward_gathers() const
{
  return static_cast<std::size_t>(std::count(gathered_for.begin() + static_cast<std::ptrdiff_t>(forward_uses), gathered_for.end(), true));
}

Stage3Fetches stage3_fetches(const std::vector<double>& elements, const std::vector<bool>& kept, double prefetch_bucket,
                             double max_live)
{
  Stage3Fetches s;
  const std::size_t L = elements.size();
  for (std::size_t i = 0; i < L; ++i)
    if (elements[i] > 0)
      s.uses.push_back(i);
  s.forward_uses = s.uses.size();
  for (std::size_t i = L; i-- > 0;)
    if (elements[i] > 0)
      s.uses.push_back(i);
  const std::size_t U = s.uses.size();
  s.issued.resize(U);
  s.gathered_for.assign(U, false);

  std::vector<bool> gathered(L, false);
  // Per layer: the latest of its uses the prefetch walk passed (skipped as gathered, or gathered for).
  std::vector<std::ptrdiff_t> passed(L, -1);
  double live = 0;        // elements gathered or in flight (__n_available_params)
  std::size_t next = 0;   // the head of the prefetch queue (__param_queue)
  const auto gather = [&](std::size_t at, std::size_t use) {
    s.issued[at].push_back(use);
    s.gathered_for[use] = true;
    gathered[s.uses[use]] = true;
    live += elements[s.uses[use]];
  };
  for (std::size_t t = 0; t < U; ++t) {
    const std::size_t x = s.uses[t];
    if (!gathered[x])
      gather(t, t);
    next = std::max(next, t + 1);  // the current use leaves the queue
    if (prefetch_bucket > 0) {
      const double budget = std::min(max_live - live, prefetch_bucket);
      double added = 0;
      while (next < U && added < budget) {
        const std::size_t y = s.uses[next];
        passed[y] = std::max(passed[y], static_cast<std::ptrdiff_t>(next));
        if (!gathered[y]) {
          added += elements[y];
          gather(t, next);
        }
        ++next;
      }
    }
    s.peak_elements = std::max(s.peak_elements, live);
    // Released after its use, unless reused within the distance or its next use already passed.
    const bool reused = t < s.forward_uses && kept[x];
    if (!reused && passed[x] <= static_cast<std::ptrdiff_t>(t)) {
      gathered[x] = false;
      live -= elements[x];
    }
  }
  return s;
}

}  // namespace dtsim
