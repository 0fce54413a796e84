#include "sim/strategies/jitter.hpp"

#include <boost/math/distributions/normal.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

namespace dtsim {

double normal_quantile(double p)
{
  return boost::math::quantile(boost::math::normal_distribution<double>(), p);
}

StepJitter::StepJitter(double cv, int ranks) : cv_(cv)
{
  const int n = std::max(1, ranks);
  z_.resize(static_cast<std::size_t>(n), 0.0);
  if (n == 1 || cv <= 0)
    return;
  for (int i = 0; i < n / 2; ++i) {  // symmetric: the mean over the ranks is exactly 0
    const double z = normal_quantile((i + 1 - 0.375) / (n + 0.25));
    z_[static_cast<std::size_t>(i)] = z;
    z_[static_cast<std::size_t>(n - 1 - i)] = -z;
  }
}

double StepJitter::factor(int rank, int iteration) const
{
  const auto n = static_cast<int>(z_.size());
  const int dealt = slot_.empty() ? rank : slot_[static_cast<std::size_t>(rank)];
  const int slot = ((dealt + iteration) % n + n) % n;
  return std::max(0.0, 1 + cv_ * z_[static_cast<std::size_t>(slot)]);
}

double StepJitter::max_factor() const
{
  return 1 + cv_ * z_.back();
}

void StepJitter::deal_over_groups(const std::vector<int>& group_of, const std::string& what)
{
  if (group_of.size() != z_.size())
    throw std::logic_error("StepJitter::deal_over_groups: one group per rank expected");
  const int groups = group_of.empty() ? 0 : *std::max_element(group_of.begin(), group_of.end()) + 1;
  std::vector<int> dealt(static_cast<std::size_t>(groups), 0);  // ranks of each group dealt so far
  slot_.assign(group_of.size(), 0);
  for (std::size_t r = 0; r < group_of.size(); ++r) {
    const int g = group_of[r];
    slot_[r] = dealt[static_cast<std::size_t>(g)]++ * groups + g;
  }
  for (const int n : dealt)
    if (n != dealt.front())
      throw std::logic_error("StepJitter::deal_over_groups: groups of unequal size");
  dealt_over_ = groups > 1 ? fmt::format("{} {}", groups, what) : "";
}

std::string StepJitter::dealing() const
{
  return dealt_over_.empty() ? "expected order statistics, rotated"
                             : fmt::format("expected order statistics dealt over the {}, rotated", dealt_over_);
}

StepJitter step_jitter(const Scenario& scenario, int ranks)
{
  double cv = kDefaultJitterCv;
  const auto compute = scenario.reader().at("training").at("compute");
  if (compute.has("jitter_cv")) {
    const auto r = compute.at("jitter_cv");
    cv = r.as_non_negative();
    if (cv >= 0.3)
      r.fail(fmt::format("expected a coefficient of variation below 0.3, got {}", cv));
  }
  return StepJitter(cv, ranks);
}

std::string apply_step_jitter(TaskGraph& graph, const std::vector<int>& ranks, const StepJitter& jitter)
{
  std::unordered_map<int, int> index;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    index.emplace(ranks[r], static_cast<int>(r));
  if (ranks.size() > 1 && jitter.cv() > 0) {
    for (int id = 0; id < graph.size(); ++id) {
      Task& t = graph[id];
      const auto it = index.find(t.device);
      if (t.kind == TaskKind::Compute && it != index.end())
        t.seconds *= jitter.factor(it->second, t.iteration);
    }
  }
  return fmt::format("step-time jitter: cv {:.1f}% per rank and iteration ({}); "
                     "the slowest of {} ranks runs {:.2f}% over the mean",
                     100 * jitter.cv(), jitter.dealing(), ranks.size(), 100 * (jitter.max_factor() - 1));
}

std::string apply_folded_step_jitter(TaskGraph& graph, const std::vector<int>& devices,
                                     const std::vector<std::vector<int>>& images, const StepJitter& jitter, int ranks,
                                     std::vector<std::vector<double>>& factors)
{
  std::unordered_map<int, std::size_t> index;
  for (std::size_t r = 0; r < devices.size(); ++r)
    index.emplace(devices[r], r);
  int iterations = 0;
  for (const Task& t : graph.tasks())
    iterations = std::max(iterations, t.iteration + 1);
  factors.assign(devices.size(), std::vector<double>(static_cast<std::size_t>(iterations), 1.0));
  if (ranks > 1 && jitter.cv() > 0) {
    for (std::size_t r = 0; r < devices.size(); ++r)
      for (int it = 0; it < iterations; ++it) {
        double slowest = 0;
        for (const int image : images[r])
          slowest = std::max(slowest, jitter.factor(image, it));
        factors[r][static_cast<std::size_t>(it)] = slowest;
      }
    for (int id = 0; id < graph.size(); ++id) {
      Task& t = graph[id];
      const auto it = index.find(t.device);
      if (t.kind == TaskKind::Compute && it != index.end() && t.iteration >= 0)
        t.seconds *= factors[it->second][static_cast<std::size_t>(t.iteration)];
    }
  }
  return fmt::format("step-time jitter: cv {:.1f}% per rank and iteration ({}); each "
                     "simulated GPU runs at the slowest of the ranks it stands for, of {} ranks in all the slowest "
                     "{:.2f}% over the mean",
                     100 * jitter.cv(), jitter.dealing(), ranks, 100 * (jitter.max_factor() - 1));
}

}  // namespace dtsim
