// Step-time jitter: expected normal order statistics (Blom), rotated per iteration; one rank is
// exactly jitter-free.
#include "sim/strategies/jitter.hpp"

#include <doctest/doctest.h>

using namespace dtsim;

TEST_CASE("normal quantiles and the expected maximum of N normals")
{
  CHECK(normal_quantile(0.5) == doctest::Approx(0.0).epsilon(1e-12));
  CHECK(normal_quantile(0.975) == doctest::Approx(1.959964).epsilon(1e-6));
  // E[max of N standard normals] (tables): 0.5642 (2), 1.0294 (4), 1.4236 (8), 1.7660 (16).
  const std::pair<int, double> expected[] = {{2, 0.5642}, {4, 1.0294}, {8, 1.4236}, {16, 1.7660}};
  for (const auto& e : expected) {
    const int n = e.first;  // not a structured binding: CAPTURE's lambda (clang 14)
    const double emax = e.second;
    CAPTURE(n);
    CHECK((StepJitter(0.01, n).max_factor() - 1) / 0.01 == doctest::Approx(emax).epsilon(0.02));
  }
}

TEST_CASE("one rank is jitter-free; the mean over ranks is the measured time; the straggler rotates")
{
  CHECK(StepJitter(0.015, 1).factor(0, 7) == 1.0);
  const StepJitter j(0.015, 8);
  for (int it = 0; it < 3; ++it) {
    double sum = 0;
    for (int r = 0; r < 8; ++r)
      sum += j.factor(r, it);
    CHECK(sum / 8 == doctest::Approx(1.0).epsilon(1e-12));
  }
  CHECK(j.factor(7, 0) == j.max_factor());
  CHECK(j.factor(6, 1) == j.max_factor());
  CHECK(j.factor(7, 1) < j.max_factor());
}

TEST_CASE("dealt over pipeline stages: every stage holds one GPU of each stratum, none all the slowest")
{
  // 4 stages of 8 GPUs (rank r in stage r / 8), as a tp-dp-pp layout numbers them.
  std::vector<int> stage_of(32);
  for (int r = 0; r < 32; ++r)
    stage_of[static_cast<std::size_t>(r)] = r / 8;
  StepJitter in_order(0.015, 32), dealt(0.015, 32);
  dealt.deal_over_groups(stage_of, "pipeline stages");
  CHECK(dealt.dealing().find("dealt over the 4 pipeline stages") != std::string::npos);
  const auto slowest = [&](const StepJitter& j, int stage) {
    double m = 0;
    for (int r = 8 * stage; r < 8 * stage + 8; ++r)
      m = std::max(m, j.factor(r, 0));
    return m;
  };
  // In rank order the last stage holds the 8 slowest and the first stage's slowest is faster than
  // the mean; dealt, each stage's slowest comes from the top eighth of the 32.
  CHECK(slowest(in_order, 0) < 1.0);
  CHECK(slowest(in_order, 3) == in_order.max_factor());
  double mean = 0;
  for (int r = 0; r < 32; ++r)
    mean += dealt.factor(r, 0) / 32;
  CHECK(mean == doctest::Approx(1.0).epsilon(1e-12));
  for (int s = 0; s < 4; ++s) {
    CAPTURE(s);
    CHECK(slowest(dealt, s) > 1.0 + 0.015 * 1.0);  // z > 1: the top eighth of 32 starts at z = 1.15
  }
  CHECK(slowest(dealt, 3) == dealt.max_factor());  // someone still holds the slowest of all
  CHECK_THROWS(dealt.deal_over_groups({0, 1, 1}, "stages"));
}
