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
