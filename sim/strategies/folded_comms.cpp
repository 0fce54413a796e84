// See folded_comms.hpp.
#include "sim/strategies/folded_comms.hpp"

#include "sim/strategies/task_util.hpp"

#include <fmt/format.h>

#include <map>

namespace dtsim {

FoldedComms::FoldedComms(const Topology& topology, const CollectiveOptions& options) : clock_(topology, options) {}

std::vector<int> FoldedComms::add(TaskGraph& graph, const std::vector<ClockedComm>& set, const std::vector<Member>& members,
                                  const std::string& name, TaskCategory category)
{
  const int id = clock_.add(set);
  std::map<int, std::vector<int>> joined;  // per item with several members: what its gate waits on
  for (const Member& m : members) {
    auto& j = joined[m.item];
    j.insert(j.end(), m.after.begin(), m.after.end());
  }
  std::map<int, int> gate;
  std::map<int, int> count;
  for (const Member& m : members)
    ++count[m.item];
  std::vector<int> out;
  for (const Member& m : members) {
    std::vector<int> after = m.after;
    if (count[m.item] > 1) {
      auto [it, fresh] = gate.try_emplace(m.item, -1);
      if (fresh)
        it->second = graph.add_delay(m.device, 0.0, name + " (every rank has joined)", category, deps(joined[m.item]));
      after = {it->second};
    }
    const int task = graph.add_delay(m.device, 0.0, name, category, deps(after));
    pending_.push_back({task, id, m.item, m.position});
    out.push_back(task);
  }
  return out;
}

void FoldedComms::finish(TaskGraph& graph)
{
  for (const Pending& p : pending_) {
    graph[p.task].seconds = clock_.seconds(p.set, p.item, p.position);
    graph[p.task].bytes = clock_.bytes_sent(p.set, p.item, p.position);
  }
}

std::pair<std::string, std::string> finish_one_representative(Plan& plan, FoldedComms& comms, const StepJitter& jitter)
{
  const int n = static_cast<int>(plan.ranks.size());
  std::vector<int> everyone(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    everyone[static_cast<std::size_t>(r)] = r;
  std::string jitter_note = apply_folded_step_jitter(plan.graph, {plan.ranks[0]}, {everyone}, jitter, n, plan.folded_jitter);
  comms.finish(plan.graph);
  plan.ranks = {plan.ranks[0]};
  plan.folded_from_gpus = n;
  return {std::move(jitter_note), folded_note(comms, n, 1, fmt::format("all {} ranks", n))};
}

std::string folded_note(const FoldedComms& comms, int gpus, int simulated, const std::string& who)
{
  return fmt::format("ranks folded: {} of the {} GPUs simulated, one for {}, which run the same schedule "
                     "(simulation.ranks \"all\" simulates every one); their {} communications are delays timed by {} "
                     "distinct sets of communications, each simulated flow by flow on its own with the copies that run "
                     "beside it ({} tasks, {} run by SimGrid after folding by symmetry); contention between "
                     "different communications is not simulated",
                     simulated, gpus, who, comms.delays(), comms.sets(), comms.set_tasks(), comms.simulated_tasks());
}

}  // namespace dtsim
