// TaskDeps, the 16-byte list of a task's dependencies: inline up to three, a heap block beyond,
// and back inline when std::unique's erase leaves three or fewer.
#include "sim/plan/task_deps.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <utility>
#include <vector>

using dtsim::TaskDeps;

namespace {
std::vector<int> items(const TaskDeps& d) { return {d.begin(), d.end()}; }
}  // namespace

TEST_CASE("inline, then a heap block, with every id kept in order")
{
  TaskDeps d;
  CHECK(d.empty());
  std::vector<int> want;
  for (int i = 0; i < 40; ++i) {
    d.push_back(100 + i);
    want.push_back(100 + i);
    REQUIRE(d.size() == want.size());
    REQUIRE(items(d) == want);
  }
  CHECK(d[39] == 139);
}

TEST_CASE("copies are deep, moves hand the block over")
{
  TaskDeps small{1, 2};
  TaskDeps big{5, 4, 3, 2, 1};
  TaskDeps copy = big;
  copy[0] = 50;
  CHECK(items(big) == std::vector<int>{5, 4, 3, 2, 1});
  CHECK(items(copy) == std::vector<int>{50, 4, 3, 2, 1});
  TaskDeps moved = std::move(copy);
  CHECK(items(moved) == std::vector<int>{50, 4, 3, 2, 1});
  CHECK(copy.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty
  small = big;
  CHECK(items(small) == items(big));
  big = TaskDeps{7};
  CHECK(items(big) == std::vector<int>{7});
  CHECK(small != big);
  CHECK(TaskDeps{1, 2, 3, 4} == TaskDeps{1, 2, 3, 4});
}

TEST_CASE("sort + unique + erase, from the heap back inline and within the heap")
{
  TaskDeps d{3, 1, 3, 1, 2, 2};
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  CHECK(items(d) == std::vector<int>{1, 2, 3});
  d.push_back(4);  // inline again, so this goes to a new block
  CHECK(items(d) == std::vector<int>{1, 2, 3, 4});
  TaskDeps e{9, 9, 8, 8, 7, 6, 5, 5};
  std::sort(e.begin(), e.end());
  e.erase(std::unique(e.begin(), e.end()), e.end());
  CHECK(items(e) == std::vector<int>{5, 6, 7, 8, 9});
  e.push_back(10);
  CHECK(items(e) == std::vector<int>{5, 6, 7, 8, 9, 10});
  TaskDeps f;
  f.assign(e.begin(), e.begin() + 2);
  CHECK(items(f) == std::vector<int>{5, 6});
  e.assign(e.begin() + 1, e.end());  // a range inside its own heap block
  CHECK(items(e) == std::vector<int>{6, 7, 8, 9, 10});
  f.assign(f.begin() + 1, f.end());  // inside its own inline words
  CHECK(items(f) == std::vector<int>{6});
}
