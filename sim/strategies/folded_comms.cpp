// See folded_comms.hpp.
#include "sim/strategies/folded_comms.hpp"

#include "sim/strategies/task_util.hpp"

#include <fmt/format.h>


namespace dtsim {

FoldedComms::FoldedComms(const Topology& topology, const CollectiveOptions& options) : clock_(topology, options) {}

std::vector<int> FoldedComms::add(TaskGraph& graph, const std::vector<ClockedComm>& set, const std::vector<Member>& members,
                                  const std::string& name, TaskCategory category)
{
  const int id = clock_.add(set);
  std::vector<int> gate(members.size(), -1);  // per member: its item's gate, when the item has several members
  std::vector<int> out;
  for (std::size_t k = 0; k < members.size(); ++k) {
    const Member& m = members[k];
    std::vector<int> joined;  // what every member of its item waits on
    bool shared = false;
    for (std::size_t e = 0; e < members.size(); ++e)
      if (members[e].item == m.item) {
        joined.insert(joined.end(), members[e].after.begin(), members[e].after.end());
        shared = shared || e != k;
        if (e < k)
          gate[k] = gate[e];
      }
    if (shared && gate[k] < 0)
      gate[k] = graph.add_delay(m.device, 0.0, name + " (every rank has joined)", category, deps(joined));
    const int task = graph.add_delay(m.device, 0.0, name, category, deps(shared ? std::vector<int>{gate[k]} : m.after));
    pending_.push_back({task, id, m.item, m.position});
    out.push_back(task);
  }
  return out;
}

int FoldedComms::add_send(TaskGraph& graph, const std::vector<ClockedComm>& set, const Member& sender, int receiver_device,
                          const std::string& name, TaskCategory category)
{
  const int task = add(graph, set, {sender}, name, category).front();
  pending_.back().receiver_device = receiver_device;
  return task;
}

void FoldedComms::finish(Plan& plan)
{
  for (const Pending& p : pending_) {
    Task& t = plan.graph[p.task];
    t.seconds = clock_.seconds(p.set, p.item, p.position);
    t.bytes = clock_.bytes_sent(p.set, p.item, p.position);
    const bool send = p.receiver_device >= 0;
    const double received = clock_.bytes_received(p.set, p.item, send ? 1 : p.position);
    if (received > 0)
      plan.folded_received.emplace(p.task, FoldedReceive{send ? p.receiver_device : t.device, received});
  }
}

std::pair<std::string, std::string> finish_one_representative(Plan& plan, FoldedComms& comms, const StepJitter& jitter)
{
  const int n = static_cast<int>(plan.ranks.size());
  std::vector<int> everyone(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    everyone[static_cast<std::size_t>(r)] = r;
  std::string jitter_note = apply_folded_step_jitter(plan.graph, {plan.ranks[0]}, {everyone}, jitter, n, plan.folded_jitter);
  comms.finish(plan);
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
