// See zero_tally.hpp.
#include "sim/strategies/zero_tally.hpp"

namespace dtsim {

void ZeroTally::count(const std::string& what, const std::string& op, int groups, double bytes)
{
  if (iteration_ != 0)
    return;
  auto& t = tally_[{what, op, groups}];
  t.first += bytes;
  ++t.second;
}

std::vector<int> ZeroTally::collective(CollectiveOp op, const std::vector<std::vector<int>>& groups, double bytes,
                                       const std::string& label, const std::string& what, TaskCategory category,
                                       std::vector<std::vector<int>> start, ShardedRun::Stream stream, int root)
{
  count(what, to_string(op), static_cast<int>(groups.size()), bytes);
  return run_.collective(op, groups, bytes, label, category, std::move(start), stream, root);
}

ZeroCollective ZeroTally::collective_fn()
{
  return [this](CollectiveOp op, const std::vector<std::vector<int>>& groups, double bytes, const std::string& label,
                const std::string& what, TaskCategory category, std::vector<std::vector<int>> start, ShardedRun::Stream stream) {
    return collective(op, groups, bytes, label, what, category, std::move(start), stream);
  };
}

std::vector<int> ZeroTally::offload_copy(std::optional<ShardedRun::Stream> stream, double bytes, bool to_host, bool pinned,
                                         const std::string& what, const std::string& label)
{
  count(what + " (ZeRO-Offload)", to_host ? "GPU -> host" : "host -> GPU", gpus_, bytes);
  return run_.host_copy(stream, bytes, to_host, pinned, label, {});
}

void ZeroTally::add_to(std::vector<CommGroup>& out) const
{
  for (const auto& [key, sum] : tally_)
    out.push_back({std::get<0>(key), std::get<1>(key), sum.first, sum.second, std::get<2>(key)});
}

}  // namespace dtsim
