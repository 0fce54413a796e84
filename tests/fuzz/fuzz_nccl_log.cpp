// nccl-tests logs: text -> rows, ranks and NCCL settings.
#include "fuzz_common.hpp"

#include "calibration/nccl_tests_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  return dtsim::fuzz::expect_input_errors_only(
      [&] { (void)dtsim::parse_nccl_tests_log(dtsim::fuzz::text_of(data, size), "fuzz.txt"); });
}
