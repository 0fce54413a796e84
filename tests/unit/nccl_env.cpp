// NCCL_ALGO / NCCL_PROTO / NCCL_NVLS_ENABLE as NCCL reads them, and the settings an nccl-tests log
// records about its run (command lines, environment listings, NCCL_DEBUG's "set by environment").
#include "calibration/nccl_tests_log.hpp"
#include "sim/collectives/nccl_env.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace dtsim;

namespace {
const std::string kRow = "     1048576        262144     float     sum      -1    66.31   15.81   27.67      0    65.27   16.07   28.11      0\n";
NcclFilter filter(const std::string& algo, const std::string& proto = "", CollectiveOp op = CollectiveOp::AllReduce)
{
  return nccl_filter_from_env(nccl_env_of(algo, proto), op, "test");
}
}  // namespace

TEST_CASE("NCCL_ALGO / NCCL_PROTO: a list, '^' to exclude, per-collective entries")
{
  CHECK(filter("").algos.empty());
  CHECK(filter("default").algos.empty());
  CHECK(filter("Ring").algos == std::vector<NcclAlgo>{NcclAlgo::Ring});
  CHECK(filter("ring,TREE").algos == std::vector<NcclAlgo>{NcclAlgo::Tree, NcclAlgo::Ring});
  const auto no_nvls = filter("^NVLS,NVLSTree").algos;
  CHECK(no_nvls.size() == kNcclAlgos - 2);
  CHECK(std::find(no_nvls.begin(), no_nvls.end(), NcclAlgo::Nvls) == no_nvls.end());
  CHECK(filter("", "LL128,Simple").protos == std::vector<NcclProto>{NcclProto::LL128, NcclProto::Simple});
  CHECK(filter("", "^LL").protos == std::vector<NcclProto>{NcclProto::LL128, NcclProto::Simple});
  // NCCL 2.24+: "func:list;func:list"; an entry without a function applies to the others.
  CHECK(filter("allreduce:tree;broadcast:ring").algos == std::vector<NcclAlgo>{NcclAlgo::Tree});
  CHECK(filter("allreduce:tree;broadcast:ring", "", CollectiveOp::Broadcast).algos == std::vector<NcclAlgo>{NcclAlgo::Ring});
  CHECK(filter("allreduce:tree", "", CollectiveOp::AllGather).algos.empty());
  CHECK(filter("ring;allreduce:tree", "", CollectiveOp::AllGather).algos == std::vector<NcclAlgo>{NcclAlgo::Ring});
  CHECK_THROWS_AS(filter("fast"), InputError);
  CHECK_THROWS_AS(filter("", "ll256"), InputError);
  CHECK_THROWS_AS(filter("^ring,tree,nvls,nvlstree,pat,collnetdirect,collnetchain"), InputError);
  CHECK_THROWS_AS(filter("allgatherv:ring"), InputError);
}

TEST_CASE("NCCL_NVLS_ENABLE=0 removes NVLS and NVLSTree; the last setting of a name wins")
{
  const NcclFilter f = nccl_filter_from_env({{"NCCL_NVLS_ENABLE", "0"}}, CollectiveOp::AllReduce, "test");
  CHECK(f.allows(NcclAlgo::Ring));
  CHECK_FALSE(f.allows(NcclAlgo::Nvls));
  CHECK_FALSE(f.allows(NcclAlgo::NvlsTree));
  CHECK(nccl_filter_from_env({{"NCCL_NVLS_ENABLE", "1"}}, CollectiveOp::AllReduce, "test").algos.empty());
  const NcclEnv env = {{"NCCL_ALGO", "Tree"}, {"NCCL_MIN_CTAS", "24"}, {"NCCL_ALGO", "Ring"}, {"NCCL_DEBUG", "INFO"}};
  CHECK(nccl_filter_from_env(env, CollectiveOp::AllReduce, "test").algos == std::vector<NcclAlgo>{NcclAlgo::Ring});
  CHECK(describe_nccl_env(env) == "NCCL_ALGO=Ring (applied), NCCL_MIN_CTAS=24 (not modelled)");
}

TEST_CASE("an nccl-tests log records the settings its run stated, not those its notes mention")
{
  const std::string text =
      "# HARDWARE: 8 GPUs; the reporter says NCCL_NVLS_ENABLE=0 was slower on another day\n"
      "# COMMAND: mpirun -np 16 -x NCCL_ALGO=Ring -x NCCL_MIN_CTAS=24; ./build/all_reduce_perf -b 1M -e 1G -g 1\n"
      "host:1:1 [0] NCCL INFO NCCL_PROTO set by environment to Simple\n"
      "# ENV: NCCL_IB_QPS_PER_CONNECTION=2, NCCL_ALGO/NCCL_PROTO as above\n"
      "# NCCL_ALGO=(NCCL's choice) NCCL_PROTO=(NCCL's choice)\n" +
      kRow;
  const auto log = parse_nccl_tests_log(text, "t.txt");
  CHECK(log.nccl_env == NcclEnv{{"NCCL_ALGO", "Ring"}, {"NCCL_MIN_CTAS", "24"}, {"NCCL_PROTO", "Simple"},
                                {"NCCL_IB_QPS_PER_CONNECTION", "2"}});
  CHECK(parse_nccl_tests_log(kRow, "plain.txt").nccl_env.empty());
}
