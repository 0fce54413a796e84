// Small helpers for strategies building task graphs.
#pragma once

#include <algorithm>
#include <vector>

namespace dtsim {

/// Dependencies without duplicates or "none" (-1) entries: the engine refuses a repeated edge.
inline std::vector<int> deps(std::vector<int> ids)
{
  ids.erase(std::remove(ids.begin(), ids.end(), -1), ids.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace dtsim
