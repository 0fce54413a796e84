// The nccl-tests log parser on every published log in tests/data/validation/nccl (both layouts).
#include "calibration/nccl_tests_log.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace dtsim;

namespace {
std::string log_path(const char* name) { return std::string(DTSIM_VALIDATION_DIR) + "/nccl/" + name; }
}  // namespace

TEST_CASE("old layout (no root column, error column): 8 x V100")
{
  const auto log = load_nccl_tests_log(log_path("8xV100_SXM2_16GB_hybridcubemesh_allreduce.txt"));
  CHECK(log.op == "all_reduce");
  CHECK_FALSE(log.has_root_column);
  REQUIRE(log.rows.size() == 25);
  CHECK(log.rows[0].size == 8);
  CHECK(log.rows[0].out_of_place.time_us == doctest::Approx(48.46));
  CHECK(log.rows.back().size == 134217728);
  CHECK(log.rows.back().out_of_place.busbw == doctest::Approx(129.14));
  CHECK(log.rows.back().in_place.time_us == doctest::Approx(1821.9));
  CHECK(log.ranks == 8);  // from busbw/algbw = 2(n-1)/n
  REQUIRE(log.avg_busbw);
  CHECK(*log.avg_busbw == doctest::Approx(25.9598));
}

TEST_CASE("new layout with root and #wrong: 2 nodes x 8 H100, 32 rows up to 16 GiB")
{
  const auto log = load_nccl_tests_log(log_path("2node_16xH100_HGX_XE9680_IB_NDR400_allreduce_issue309.txt"));
  CHECK(log.op == "all_reduce");
  CHECK(log.has_root_column);
  REQUIRE(log.rows.size() == 32);
  CHECK(log.rows.back().size == 17179869184ULL);
  CHECK(log.rows.back().root == -1);
  CHECK(log.rows.back().out_of_place.time_us == doctest::Approx(68652));
  CHECK(log.ranks == 16);
}

TEST_CASE("every validation log parses, with the op and rank count it was measured with")
{
  struct Case { const char* file; const char* op; int ranks; std::size_t rows; };
  for (const Case& c : {Case{"2node_16xA100_SXM4_80GB_gcm_fixture_allreduce.txt", "all_reduce", 16, 6},
                        Case{"8xA100_NVLink_sendrecv_p2p.txt", "sendrecv", 0, 4},
                        Case{"8xA100_SXM4_80GB_nccl2.19_allreduce.txt", "all_reduce", 8, 25},
                        Case{"8xH100_SXM_NVSwitch_NVLS_allreduce_issue290.txt", "all_reduce", 8, 6},
                        Case{"multinode_H100_IB400_scaling_issue309_2node_default.txt", "all_reduce", 16, 14},
                        Case{"pcie_2xRTX2080Ti_noP2P_allreduce.txt", "all_reduce", 2, 28},
                        Case{"pcie_8xRTX4090_noP2P_stockdriver_allreduce.txt", "all_reduce", 8, 25}}) {
    CAPTURE(c.file);
    const auto log = load_nccl_tests_log(log_path(c.file));
    CHECK(log.op == c.op);
    CHECK(log.ranks == c.ranks);
    CHECK(log.rows.size() == c.rows);
  }
}

TEST_CASE("header lines give the op and the rank count; malformed rows are input errors")
{
  const std::string text =
      "# Collective test starting: all_gather_perf\n"
      "# nThread 1 nGpus 4 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 20\n"
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
      "        1024            64     float    none      -1    10.00    0.10    0.08     N/A    10.00    0.10    0.08     N/A\n";
  const auto log = parse_nccl_tests_log(text, "mem.txt");
  CHECK(log.op == "all_gather");
  CHECK(log.ranks == 4);
  CHECK(log.rows.at(0).count == 64);
  CHECK_THROWS_AS(parse_nccl_tests_log("# nothing\n", "empty.txt"), InputError);
  CHECK_THROWS_AS(parse_nccl_tests_log("1024 256 float sum -1 x 1 1 0 1 1 1 0\n", "bad.txt"), InputError);
  CHECK(looks_like_nccl_tests_log(text));
  CHECK_FALSE(looks_like_nccl_tests_log("Device: 0, Tesla V100\n"));
}

TEST_CASE("an MPI run (one GPU per process, no Rank lines) takes its rank count from busbw / algbw")
{
  // gj-aion's 8-node run in nccl-tests#309: "nThread 1 nGpus 1" in every process, 64 ranks.
  const std::string text =
      "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "  8589934592    2147483648     float     sum      -1    52733  162.90  320.70      0    52754  162.83  320.57      0\n";
  CHECK(parse_nccl_tests_log(text, "mpi.txt").ranks == 64);
}

TEST_CASE("busbw / algbw at 2 decimals only bounds a large rank count; the range is kept")
{
  // Niger1's 1024-rank run in nccl-tests#322 (mpirun -np 1024, one GPU per process): the largest
  // row alone gives 994 ranks; the rounding of every row allows 1003-1035.
  const std::string text =
      "# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 34359738368 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "  1073741824     268435456     float     sum      -1    19355   55.48  110.84      0    19189   55.96  111.80      0\n"
      "  8589934592    2147483648     float     sum      -1    47078  182.46  364.57      0    46939  183.00  365.65      0\n"
      " 17179869184    4294967296     float     sum      -1    93457  183.83  367.29      0    93420  183.90  367.44      0\n";
  const auto log = parse_nccl_tests_log(text, "mpi1024.txt");
  CHECK(log.ranks_min <= 1024);
  CHECK(log.ranks_max >= 1024);
  CHECK(log.ranks_min > 900);
  CHECK(log.ranks_max < 1100);
  CHECK(log.ranks >= log.ranks_min);
  CHECK(log.ranks <= log.ranks_max);
}

TEST_CASE("rank lines fix the rank count exactly")
{
  const std::string text = "#  Rank  0 Group  0 Pid 1 on host device  0 [0x07] NVIDIA H100\n"
                           "#  Rank  1 Group  0 Pid 1 on host device  1 [0x08] NVIDIA H100\n"
                           "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                           "    33554432       8388608     float     sum      -1   300.00  111.85  111.85      0   300.00  111.85  111.85      0\n";
  const auto log = parse_nccl_tests_log(text, "two.txt");
  CHECK(log.ranks == 2);
  CHECK(log.ranks_min == 2);
  CHECK(log.ranks_max == 2);
}

TEST_CASE("rank lines name the host and device of each rank (a -g 4 run on 4 of 8 GPUs)")
{
  const std::string text = "# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor)\n"
                           "#  Rank  0 Group  0 Pid  41234 on     dgx1a device  2 [0x0a] Tesla V100-SXM2-16GB\n"
                           "#  Rank  1 Group  0 Pid  41234 on     dgx1a device  3 [0x0b] Tesla V100-SXM2-16GB\n"
                           "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                           "    33554432       8388608     float     sum      -1   300.00  111.85  111.85      0   300.00  111.85  111.85      0\n";
  const auto log = parse_nccl_tests_log(text, "g2.txt");
  REQUIRE(log.rank_devices.size() == 2);
  CHECK(log.rank_devices[0] == std::pair<std::string, int>{"dgx1a", 2});
  CHECK(log.rank_devices[1] == std::pair<std::string, int>{"dgx1a", 3});
}
