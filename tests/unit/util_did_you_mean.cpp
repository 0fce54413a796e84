// "did you mean": the closest known name by edit distance, else by a long shared beginning; nothing
// when none is close or two are equally close.
#include "sim/util/did_you_mean.hpp"

#include <doctest/doctest.h>

using namespace dtsim;

TEST_CASE("closest name")
{
  const std::vector<std::string> commands = {"run", "sweep", "topology", "nccl-tests", "validate", "explain"};
  CHECK(closest_name("rnu", commands) == "run");
  CHECK(closest_name("valdiate", commands) == "validate");
  CHECK(closest_name("nccl_tests", commands) == "nccl-tests");  // '-' and '_' alike
  CHECK(closest_name("RUN", commands) == "run");                // case alike
  CHECK_FALSE(closest_name("zzzzzz", commands));
  CHECK_FALSE(closest_name("", commands));

  const std::vector<std::string> training = {"dataset_samples", "batch_per_gpu", "epochs", "precision", "compute", "loader"};
  CHECK(closest_name("batchsize", training) == "batch_per_gpu");  // by the shared beginning "batch"
  CHECK(closest_name("epoch", training) == "epochs");
  CHECK(closest_name("precison", training) == "precision");
  CHECK_FALSE(closest_name("lr", training));

  CHECK(closest_name("resnet5000", {"resnet50", "resnet18", "resnet101"}) == "resnet50");
  CHECK_FALSE(closest_name("resnet", {"resnet50", "resnet18"}));  // a tie: no guess
  CHECK(closest_name("dgx1", {"dgx1-v100", "dgx2-v100", "dgx-a100"}) == "dgx1-v100");

  CHECK(did_you_mean("ddpp", {"ddp", "dp", "pipeline"}) == ", did you mean \"ddp\"?");
  CHECK(did_you_mean("xyzzy", {"ddp", "dp", "pipeline"}).empty());
  CHECK_FALSE(closest_name(std::string(100000, 'a'), {"a"}));  // no quadratic work on a huge name
}
