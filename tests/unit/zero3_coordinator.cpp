// ZeRO-3's parameter coordinator (zero3_coordinator.hpp) against schedules worked out by hand from
// partitioned_param_coordinator.py: modules of one element each, so that the prefetch bucket and
// stage3_max_live_parameters count modules.
#include "sim/strategies/zero3_coordinator.hpp"

#include <doctest/doctest.h>

#include <numeric>

using namespace dtsim;

namespace {

constexpr std::size_t L = 10;
const std::vector<double> ones(L, 1.0);
const std::vector<bool> none_kept(L, false);

}  // namespace

TEST_CASE("uses: the forward in order, then the backward in reverse; layers without partitioned elements left out")
{
  std::vector<double> e = ones;
  e[3] = 0;
  const Stage3Fetches s = stage3_fetches(e, none_kept, 0, 1e9);
  REQUIRE(s.uses.size() == 18);
  CHECK(s.forward_uses == 9);
  CHECK(s.uses[2] == 2);
  CHECK(s.uses[3] == 4);
  CHECK(s.uses[9] == 9);
  CHECK(s.uses[17] == 0);
}

TEST_CASE("no prefetch: every use gathers its module itself, one module gathered at a time")
{
  for (const auto& [bucket, live] : {std::pair{0.0, 1e9}, std::pair{1.0, 1.0}, std::pair{5.0, 0.0}}) {
    const Stage3Fetches s = stage3_fetches(ones, none_kept, bucket, live);
    CHECK(s.forward_gathers() == L);
    CHECK(s.backward_gathers() == L);
    for (std::size_t u = 0; u < s.uses.size(); ++u)
      CHECK(s.issued[u] == std::vector<std::size_t>{u});
    CHECK(s.peak_elements == 1);
  }
}

TEST_CASE("a bucket of one module: the prefetch keeps one use ahead; the last forward module is passed in its gathered state and stays")
{
  const Stage3Fetches s = stage3_fetches(ones, none_kept, 1, 1e9);
  CHECK(s.issued[0] == std::vector<std::size_t>{0, 1});
  for (std::size_t u = 1; u + 1 < L; ++u)
    CHECK(s.issued[u] == std::vector<std::size_t>{u + 1});
  // At the last forward use the walk passes its backward use (gathered) and gathers the next.
  CHECK(s.issued[L - 1] == std::vector<std::size_t>{L + 1});
  CHECK(s.forward_gathers() == L);
  CHECK(s.backward_gathers() == L - 1);
  CHECK(s.peak_elements == 3);  // at the first backward use: the last forward module, and two gathered ahead
}

TEST_CASE("stage3_max_live_parameters bounds the prefetch: the walk runs ahead until that many elements are gathered")
{
  // A bucket of 2 modules per fetch, at most 4 gathered: the walk gains one module per use until 4
  // are gathered, then holds (4 after the prefetch, 3 after the release).
  const Stage3Fetches s = stage3_fetches(ones, none_kept, 2, 4);
  CHECK(s.issued[0] == std::vector<std::size_t>{0, 1, 2});
  CHECK(s.issued[1] == std::vector<std::size_t>{3, 4});
  CHECK(s.issued[2] == std::vector<std::size_t>{5});
  CHECK(s.issued[3] == std::vector<std::size_t>{6});
  CHECK(s.peak_elements == 4);
  // At the 8th use the walk passes the backward uses of the last 3 forward modules, gathered, so
  // they stay; it gathers the 7th again (released after its forward) as its 4th.
  CHECK(s.issued[7] == std::vector<std::size_t>{L + 3});
  CHECK(s.backward_gathers() == L - 3);
  // Unbounded, the first fetch's walk runs through the whole forward and backward.
  const Stage3Fetches all = stage3_fetches(ones, none_kept, 1e9, 1e9);
  CHECK(all.issued[0].size() == L);
  CHECK(all.backward_gathers() == 0);
  CHECK(all.peak_elements == L);
}

TEST_CASE("a module the reuse rule keeps is not gathered again for its backward")
{
  std::vector<bool> kept(L, false);
  kept[L - 1] = kept[L - 2] = true;
  const Stage3Fetches s = stage3_fetches(ones, kept, 0, 1e9);
  CHECK(s.backward_gathers() == L - 2);
  CHECK(!s.gathered_for[L]);
  CHECK(!s.gathered_for[L + 1]);
  CHECK(s.gathered_for[L + 2]);
  CHECK(s.peak_elements == 2);  // the two kept, the second in use
}
