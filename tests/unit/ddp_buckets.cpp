// DDP bucket assignment follows PyTorch's compute_bucket_assignment_by_size on ResNet-50.
#include "sim/model/model.hpp"
#include "sim/strategies/buckets.hpp"
#include "sim/util/units.hpp"

#include <doctest/doctest.h>

#include <numeric>

using namespace dtsim;

TEST_CASE("ResNet-50 fp32 buckets after the rebuild: fc alone, then ~25 MiB buckets")
{
  const Model m = load_model("resnet50");
  const auto b = assign_buckets(m, 4.0, 1 * kMiB, 25 * kMiB);
  // Reference (nccl-and-pytorch-model.md §5): about 7.8 (fc alone), 30.0, 25.0, 25.3, 9.3 MiB.
  REQUIRE(b.size() == 5);
  CHECK(b[0].bytes / kMiB == doctest::Approx(7.8).epsilon(0.01));
  CHECK(b[0].tensors == 2);
  CHECK(b[1].bytes / kMiB == doctest::Approx(30.0).epsilon(0.01));
  CHECK(b[2].bytes / kMiB == doctest::Approx(25.0).epsilon(0.01));
  CHECK(b[3].bytes / kMiB == doctest::Approx(25.3).epsilon(0.01));
  CHECK(b[4].bytes / kMiB == doctest::Approx(9.3).epsilon(0.02));
  const double total = std::accumulate(b.begin(), b.end(), 0.0, [](double s, const Bucket& x) { return s + x.bytes; });
  CHECK(total == doctest::Approx(25'557'032.0 * 4));
  std::size_t tensors = 0;
  for (std::size_t k = 0; k < b.size(); ++k) {
    tensors += b[k].tensors;
    if (k > 0)
      CHECK(b[k].ready_after_layer <= b[k - 1].ready_after_layer);  // later buckets are ready later
  }
  CHECK(tensors == 161);
  CHECK(b.back().ready_after_layer == 0);  // the last bucket waits for conv1's gradient
}

TEST_CASE("a bucket closes once it reaches its limit, so it may exceed it by one tensor")
{
  Model m;
  m.name = "synthetic";
  for (int i = 0; i < 4; ++i) {
    Layer l;
    l.name = "l" + std::to_string(i);
    l.param_tensors = {1000};
    l.fwd_flops = 1;
    m.layers.push_back(l);
  }
  const auto b = assign_buckets(m, 4.0, 3000, 6000);
  REQUIRE(b.size() == 3);
  CHECK(b[0].bytes == 4000);  // first limit 3000: one 4000-byte tensor closes it
  CHECK(b[1].bytes == 8000);  // then 6000: two tensors
  CHECK(b[2].bytes == 4000);  // the remainder
  CHECK(b[0].ready_after_layer == 3);
  CHECK(b[2].ready_after_layer == 0);
}

TEST_CASE("DeepSpeed's buckets are reduced before a tensor would overflow them, never past the cap unless one tensor is")
{
  Model m;
  m.name = "synthetic";
  for (const double t : {1000.0, 1000.0, 5000.0, 1000.0}) {
    Layer l;
    l.name = "l" + std::to_string(m.layers.size());
    l.param_tensors = {static_cast<std::int64_t>(t)};
    l.fwd_flops = 1;
    m.layers.push_back(l);
  }
  // Reduction order: l3 (1000), l2 (5000), l1, l0 (1000 each); cap 3000 elements of 2 bytes.
  const auto b = assign_capped_buckets(m, 2.0, 6000);
  REQUIRE(b.size() == 3);
  CHECK(b[0].bytes == 2000);   // l3 alone: l2 would take it past the cap
  CHECK(b[1].bytes == 10000);  // l2 alone, larger than the cap
  CHECK(b[2].bytes == 4000);   // l1 and l0
  CHECK(b[0].ready_after_layer == 3);
  CHECK(b[1].ready_after_layer == 2);
  CHECK(b[2].ready_after_layer == 0);
  CHECK(b[2].tensors == 2);
}

TEST_CASE("a bucket's slices by owner: equal partitions of the flat parameters, in flat order")
{
  // 100 elements on 4 ranks: partitions of 25.
  auto s = partition_slices(20, 60, 100, 4);
  REQUIRE(s.size() == 3);
  CHECK(s[0] == std::pair<int, double>{0, 5});
  CHECK(s[1] == std::pair<int, double>{1, 25});
  CHECK(s[2] == std::pair<int, double>{2, 10});
  s = partition_slices(25, 50, 100, 4);  // exactly one partition
  REQUIRE(s.size() == 1);
  CHECK(s[0] == std::pair<int, double>{1, 25});
  s = partition_slices(0, 100, 100, 1);
  REQUIRE(s.size() == 1);
  CHECK(s[0].second == 100);
  // The slices add up to the range, whatever the division's round-off.
  double sum = 0;
  for (const auto& [owner, n] : partition_slices(1.0 / 3, 99.9, 100, 7)) {
    CHECK(owner >= 0);
    CHECK(owner < 7);
    sum += n;
  }
  CHECK(sum == doctest::Approx(99.9 - 1.0 / 3));
  CHECK(partition_slices(50, 50, 100, 4).empty());
}
