// Loading model files: by name, by path, and every way a model file can be wrong (file, JSON
// pointer, what was expected). Fixtures: tests/data/models/.
#include "sim/model/model.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace dtsim;

namespace {

const std::string kFixtures = std::string(DTSIM_TESTS_DIR) + "/data/models/";

bool contains(const std::string& text, const std::string& part)
{
  return text.find(part) != std::string::npos;
}

// Loads a fixture expecting an InputError at `pointer` whose message mentions `expected`.
void check_rejected(const std::string& fixture, const std::string& pointer, const std::string& expected)
{
  CAPTURE(fixture);
  try {
    load_model(kFixtures + fixture);
    FAIL("accepted " << fixture);
  } catch (const InputError& e) {
    CHECK(e.file() == kFixtures + fixture);
    CHECK(e.pointer() == pointer);
    CHECK_MESSAGE(contains(e.problem(), expected), e.what());
  }
}

}  // namespace

TEST_CASE("a model file is loaded by path, with every field")
{
  const Model m = load_model(kFixtures + "tiny_mlp.json");
  CHECK(m.name == "tiny-mlp");
  CHECK(m.input_elems == 4);
  CHECK(m.arch.at("hidden") == 3);
  REQUIRE(m.layers.size() == 3);
  CHECK(m.layers[0].kind == "linear");
  CHECK(m.layers[0].param_tensors == std::vector<std::int64_t>{12, 3});
  CHECK(m.layers[0].block == "fc1");  // a block of its own when "block" is absent
  CHECK(m.layers[1].block == "act");
  CHECK(m.layers[1].param_tensors.empty());
  CHECK(m.layers[2].buffer_elems == 0);
  CHECK(m.params() == 23);
  CHECK(m.param_tensor_count() == 4);
  CHECK(m.fwd_flops() == 36);
  CHECK(m.cut_allowed_after(0));
  CHECK(m.cut_allowed_after(1));
  CHECK_FALSE(m.cut_allowed_after(2));
}

TEST_CASE("a relative model path is also looked up beside the file that names it")
{
  const Model m = load_model("tiny_mlp.json", kFixtures + "scenario_that_names_it.json", "/model");
  CHECK(m.name == "tiny-mlp");
  try {
    load_model("no_such_model.json", kFixtures + "scenario.json", "/model");
    FAIL("accepted a missing file");
  } catch (const InputError& e) {
    CHECK(e.file() == kFixtures + "scenario.json");
    CHECK(e.pointer() == "/model");
    CHECK(contains(e.problem(), "no_such_model.json"));
  }
}

TEST_CASE("an unknown model name names its origin and lists the shipped models")
{
  try {
    load_model("resnet5", "scenarios/x.json", "/model");
    FAIL("accepted an unknown model");
  } catch (const InputError& e) {
    CHECK(e.file() == "scenarios/x.json");
    CHECK(e.pointer() == "/model");
    CHECK(contains(e.problem(), "\"resnet5\""));
    CHECK(contains(e.problem(), "resnet50"));
    CHECK(contains(e.problem(), "toymodel"));
  }
  const auto names = model_names();
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::find(names.begin(), names.end(), "gpt3-175b") != names.end());
}

TEST_CASE("malformed model files are rejected at the offending JSON pointer")
{
  check_rejected("bad_negative_tensor.json", "/layers/2/params/0", ">= 0");
  check_rejected("bad_fractional_tensor.json", "/layers/0/params/1", "integer");
  check_rejected("bad_empty_layers.json", "/layers", "non-empty");
  check_rejected("bad_missing_flops.json", "/layers/1", "fwd_flops");
  check_rejected("bad_kind.json", "/layers/0/kind", "\"convolution\"");
  check_rejected("bad_unknown_member.json", "/layers/2/flops", "unknown member");
  check_rejected("bad_zero_activation.json", "/layers/1/activation_elems", "positive");
  check_rejected("bad_duplicate_name.json", "/layers/2/name", "duplicate");
  check_rejected("bad_split_block.json", "/layers/2", "contiguous");
  check_rejected("bad_arch.json", "/arch/hidden", "number");
  check_rejected("bad_no_params.json", "/layers", "no parameters");
}

TEST_CASE("a model file that is not JSON reports the line")
{
  try {
    load_model(kFixtures + "bad_syntax.json");
    FAIL("accepted malformed JSON");
  } catch (const InputError& e) {
    CHECK(e.file() == kFixtures + "bad_syntax.json");
    CHECK(contains(e.problem(), "line 4"));
  }
}
