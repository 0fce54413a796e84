// nccl-tests output format: number formatting (getFloatStr), column widths, counts per collective.
#include "sim/collectives/nccl_tests_table.hpp"

#include <doctest/doctest.h>

using namespace dtsim;

TEST_CASE("getFloatStr: %.2f, then %.1f, then %.0f to fit the width")
{
  CHECK(nccl_float_str(195.4, 7) == " 195.40");
  CHECK(nccl_float_str(1295.41, 7) == "1295.41");
  CHECK(nccl_float_str(12345.67, 7) == "12345.7");
  CHECK(nccl_float_str(134330.0, 7) == " 134330");
  CHECK(nccl_float_str(300.51, 6) == "300.51");
  CHECK(nccl_float_str(1234.56, 6) == "1234.6");
  CHECK(nccl_float_str(0.0, 6) == "  0.00");
}

TEST_CASE("a row reproduces a published all_reduce row (8 ranks) up to the #wrong column")
{
  NcclTestsTableRow row;
  row.size = nccl_tests_size("all_reduce", 33554432, 8);
  row.time_us = 195.40;
  const std::string line = format_nccl_tests_row("all_reduce", 8, row);
  CHECK(line.rfind("    33554432       8388608     float     sum      -1   195.40  171.72  300.51     N/A", 0) == 0);
  CHECK(line.size() == 12 + 2 + 12 + 2 + 8 + 2 + 6 + 2 + 6 + 2 * (2 + 7 + 2 + 6 + 2 + 6 + 2 + 6));
}

TEST_CASE("sizes and counts follow nccl-tests' per-collective rules")
{
  CHECK(nccl_tests_size("all_gather", 8, 8).bytes == 0);  // count/nranks rounded down to 4 elements
  CHECK(nccl_tests_size("all_gather", 1024, 8).count == 32);
  CHECK(nccl_tests_size("all_gather", 1024, 8).bytes == 1024);
  CHECK(nccl_tests_size("reduce_scatter", 1000, 8).bytes == 896);
  CHECK(nccl_tests_size("all_reduce", 10, 8).bytes == 8);
  const auto sizes = nccl_tests_sweep_sizes(8, 8ULL << 30, 2);
  CHECK(sizes.size() == 31);
  CHECK(sizes.back() == 8ULL << 30);
}

TEST_CASE("the footer averages busbw over out-of-place and in-place rows")
{
  NcclTestsTable t;
  t.op = "all_reduce";
  t.ranks = 2;
  t.rows.push_back({nccl_tests_size("all_reduce", 1000000000, 2), 1e6});  // 1 GB/s
  t.rows.push_back({nccl_tests_size("all_reduce", 1000000000, 2), 5e5});  // 2 GB/s
  const std::string out = format_nccl_tests_table(t);
  CHECK(out.find("# Avg bus bandwidth    : 1.5 \n") != std::string::npos);
  CHECK(out.find("# Collective test concluded: all_reduce_perf\n") != std::string::npos);
}
