// `dtsim validate RUNS.csv` on every public measured run the repository keeps
// (tests/data/training/runs.csv): NVIDIA DeepLearningExamples ResNet-50 DDP speedups (1-16 GPUs),
// the DataParallel vs DDP comparisons of tczhangzhi/pytorch-distributed and Hugging Face, and the
// seed's table. Targets (issue 14, issue 32): every DataParallel row slower than its DDP baseline,
// with the predicted DP/DDP ratio within 10% of the measured one (the seed's table, an illustrative
// blog table with no machine stated, within 25%); DDP speedups within 3%, except the known misses
// below, which are held within their present error so that a change that moves them shows.
//
// Known miss: the pytorch-21.03 AMP rows on 8 GPUs (native DataLoader, 8 workers per GPU on a
// DGX-1, 16 on a DGX A100) scale 6.7-7.0x as published. With the host as a shared machine (issue
// 32: 71 busy threads on the DGX-1's 40 cores, SMT siblings, the load curve) the DGX-1 rows are
// predicted input-bound at -2.9% and +0.1% (one prediction for both: the two published runs differ
// by 3.3% on the same machine), within 3% with the others. The DGX A100 row stays at +10.7%: its
// 128 cores keep 123 busy threads below the point where its loader (87 ms per batch) would slow the
// GPUs (99 ms); what is not modelled: NUMA nodes within a socket (DLE's gpu_affinity keeps a process
// on its GPU's, half of the cores on a DGX A100), the main thread's own per-step work.
//
// Then the columns of Megatron-LM runs (micro_batch, global_batch, activation_checkpointing, hybrid's
// options): the scenario each row becomes, and the CSV, line and column of every bad cell, whether
// the CSV reader, the scenario or the plan finds it.
#include "sim/predict/training_runs.hpp"
#include "sim/predict/training_memory.hpp"

#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace dtsim;

TEST_CASE("measured training runs: DP/DDP ratios within 10%, DDP speedups within 3% (known misses listed)")
{
  const auto runs = validate_training_runs(std::string(DTSIM_TESTS_DIR) + "/data/training/runs.csv");
  fmt::print("{}", format_training_runs(runs));
  int dp = 0, ddp = 0;
  for (const auto& r : runs) {
    if (r.baseline.empty())
      continue;
    CAPTURE(r.id);
    if (r.id.find("-dp-") != std::string::npos) {
      ++dp;
      CHECK(r.measured_ratio < 1);
      CHECK(r.predicted_ratio < 1);  // DataParallel slower than DDP
      CHECK(std::abs(r.error) < (r.id.rfind("seed-", 0) == 0 ? 0.25 : 0.10));
    } else if (r.id.find("dgx-a100-80g-21.03-amp-8gpu") != std::string::npos) {
      CHECK(r.error > 0.03);  // known miss: over-predicted
      CHECK(r.error < 0.12);
    } else {
      ++ddp;
      CHECK(std::abs(r.error) < 0.03);
    }
  }
  CHECK(dp == 3);
  CHECK(ddp == 21);
}

// The Megatron-LM columns (training_runs.hpp): micro_batch, global_batch, activation_checkpointing and
// hybrid's tensor_parallel, pipeline_stages, schedule, sequence_parallel, distributed_optimizer.
namespace {

const std::string kMegatronHeader =
    "id,baseline,cluster,gpu,nodes,gpus,model,precision,strategy,tensor_parallel,pipeline_stages,micro_batch,"
    "global_batch,schedule,activation_checkpointing,sequence_parallel,distributed_optimizer,compute,measured,unit,source\n";
const std::string kRow175b =
    "sel,,dgx-a100,A100-SXM4-80GB,8,64,megatron-gpt-175b,fp16,hybrid,8,8,1,64,1f1b,selective,true,false,"
    "efficiency=0.5,13.75,s,test\n";

std::vector<std::string> cells_of(const std::string& line)
{
  std::vector<std::string> out(1);
  for (const char c : line) {
    if (c == ',')
      out.emplace_back();
    else if (c != '\n')
      out.back() += c;
  }
  return out;
}

/// A CSV of kRow175b with the cells of the given columns replaced.
std::string with_cells(const std::vector<std::pair<std::string, std::string>>& changes)
{
  const auto names = cells_of(kMegatronHeader);
  auto cells = cells_of(kRow175b);
  for (const auto& [column, value] : changes)
    cells[static_cast<std::size_t>(std::find(names.begin(), names.end(), column) - names.begin())] = value;
  return kMegatronHeader + fmt::format("{}\n", fmt::join(cells, ","));
}

/// The problem of the InputError that reading `csv` and parsing its rows' scenarios throws.
std::string problem_of(const std::string& csv)
{
  try {
    for (const auto& row : read_training_runs(csv, "megatron.csv"))
      (void)parse_training_run(row);
  } catch (const InputError& e) {
    CHECK(e.file() == "megatron.csv");
    return e.problem();
  }
  return "no error";
}

/// The same through validate_training_runs (a value that building the plan checks): the CSV is
/// written to a temporary file, whose name the error gives.
std::string predicted_problem_of(const std::string& csv)
{
  const auto path = std::filesystem::temp_directory_path() / fmt::format("dtsim-megatron-runs-{}.csv", ::getpid());
  {
    std::ofstream(path) << csv;
  }
  std::string problem = "no error";
  try {
    (void)validate_training_runs(path.string());
  } catch (const InputError& e) {
    CHECK(e.file() == path.string());
    problem = e.problem();
  }
  std::filesystem::remove(path);
  return problem;
}

}  // namespace

TEST_CASE("runs CSV: Megatron-LM columns become the scenario's batch and hybrid options")
{
  const auto rows = read_training_runs(kMegatronHeader + kRow175b, "megatron.csv");
  REQUIRE(rows.size() == 1);
  const auto& s = rows[0].scenario;
  CHECK(s["training"]["micro_batch"] == 1);
  CHECK(s["training"]["global_batch"] == 64);
  CHECK_FALSE(s["training"].contains("batch_per_gpu"));
  CHECK(s["training"]["activation_checkpointing"] == "selective");
  CHECK(s["strategy"] == nlohmann::json{{"kind", "hybrid"},   {"tensor_parallel", 8},      {"pipeline_stages", 8},
                                        {"schedule", "1f1b"}, {"sequence_parallel", true}, {"distributed_optimizer", false}});
  // A time with its global batch is judged as samples/s.
  CHECK(rows[0].measured_rate == doctest::Approx(64 / 13.75));
  CHECK(rows[0].summary == "hybrid 64 GPUs megatron-gpt-175b fp16 mb1 gb64 tp8 pp8");

  const Scenario parsed = parse_training_run(rows[0]);
  CHECK(parsed.strategy_spec.tensor == 8);
  CHECK(parsed.strategy_spec.stages == 8);
  CHECK(parsed.strategy_spec.data == 1);
  CHECK(parsed.training.batch.accumulation == 64);  // 64 micro-batches of 1 through the pipeline
  CHECK(parsed.training.recomputation.policy == ActivationCheckpointing::Selective);

  // Blank cells leave the fields out: the scenario's defaults. The header may leave out batch_per_gpu.
  const auto plain = read_training_runs(
      "id,cluster,gpu,nodes,gpus,model,precision,strategy,micro_batch,tensor_parallel,compute,measured,unit\n"
      "a,dgx-a100,A100-SXM4-80GB,1,8,gpt2,fp16,hybrid,4,,efficiency=0.5,100,samples/s\n",
      "megatron.csv");
  CHECK(plain[0].scenario["strategy"] == nlohmann::json{{"kind", "hybrid"}});
  CHECK(plain[0].scenario["training"]["micro_batch"] == 4);
  CHECK_FALSE(plain[0].scenario["training"].contains("global_batch"));
  CHECK(plain[0].measured_rate == 100);
  CHECK(plain[0].summary == "hybrid 8 GPUs gpt2 fp16 mb4");
}

TEST_CASE("the Megatron-LM validation CSVs run Megatron-LM's default optimizer, Adam")
{
  // megatron/training/arguments.py: `--optimizer` default 'adam'; the papers' runs pass none. dtsim's
  // own default (SGD) would count 8 B of optimizer state per parameter, not Adam's 12.
  for (const char* name : {"megatron_runs", "megatron_runs_large", "megatron_weak_scaling"}) {
    CAPTURE(name);
    const std::string path = fmt::format("{}/data/training/{}.csv", DTSIM_TESTS_DIR, name);
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto rows = read_training_runs(text, path);
    REQUIRE_FALSE(rows.empty());
    for (const auto& row : rows)
      CHECK(parse_training_run(row).training.optimizer == "adam");
  }
}

TEST_CASE("runs CSV: bad Megatron-LM cells name the CSV, the line and the column")
{
  CHECK(problem_of(with_cells({{"micro_batch", "0"}})) ==
        "line 2, column micro_batch: expected a whole number from 1 to 1048576, got '0'");
  CHECK(problem_of(with_cells({{"global_batch", "-64"}})) ==
        "line 2, column global_batch: expected a whole number from 1 to 1073741824, got '-64'");
  CHECK(problem_of(with_cells({{"micro_batch", ""}})) ==
        "line 2, column global_batch: expected micro_batch beside global_batch (the samples one data-parallel "
        "replica runs per micro-step), got an empty micro_batch cell");
  CHECK(problem_of(with_cells({{"tensor_parallel", "eight"}})) ==
        "line 2, column tensor_parallel: expected a whole number from 1 to 1048576, got 'eight'");
  CHECK(problem_of(with_cells({{"sequence_parallel", "yes"}})) ==
        "line 2, column sequence_parallel: expected true or false, got 'yes'");
  CHECK(problem_of(with_cells({{"distributed_optimizer", "1"}})) ==
        "line 2, column distributed_optimizer: expected true or false, got '1'");
  CHECK(problem_of(with_cells({{"strategy", "ddp"}})) ==
        "line 2, column tensor_parallel: expected an empty cell for strategy 'ddp' (tensor_parallel is an option of "
        "hybrid and fsdp), got '8'");
  CHECK(problem_of(with_cells({{"strategy", "pipeline"}, {"tensor_parallel", ""}, {"pipeline_stages", ""},
                               {"sequence_parallel", ""}, {"distributed_optimizer", "true"}})) ==
        "line 2, column distributed_optimizer: expected an empty cell for strategy 'pipeline' (distributed_optimizer "
        "is an option of hybrid), got 'true'");

  // Values the scenario checks: the row's column, not the scenario's JSON pointer.
  CHECK(problem_of(with_cells({{"pipeline_stages", "16"}})) ==
        "line 2, column gpus: expected a multiple of tensor_parallel x pipeline_stages = 8 x 16 = 128 GPUs, got 64");
  CHECK(problem_of(with_cells({{"nodes", "16"}, {"gpus", "128"}, {"global_batch", "63"}})) ==
        "line 2, column global_batch: expected a multiple of training.micro_batch x data-parallel replicas = 1 x 2 = 2, "
        "got 63");
  CHECK(problem_of(with_cells({{"activation_checkpointing", "some"}})).rfind("line 2, column activation_checkpointing: ", 0) ==
        0);
  CHECK(problem_of(with_cells({{"tensor_parallel", "0"}})) ==
        "line 2, column tensor_parallel: expected a whole number from 1 to 1048576, got '0'");
  // ... and those that building the plan checks.
  CHECK(predicted_problem_of(with_cells({{"schedule", "interleaved"}})).rfind("line 2, column schedule: ", 0) == 0);
  CHECK(predicted_problem_of(with_cells({{"pipeline_stages", "5"}, {"nodes", "5"}, {"gpus", "40"}, {"global_batch", "40"}}))
            .rfind("line 2, column pipeline_stages: expected pipeline stages that divide", 0) == 0);

  // batch_per_gpu beside micro_batch: one way or the other.
  CHECK(problem_of("id,cluster,nodes,gpus,model,precision,batch_per_gpu,micro_batch,strategy,compute,measured,unit\n"
                   "a,dgx-a100,1,8,gpt2,fp16,4,4,ddp,throughput=10,10,samples/s\n") ==
        "line 2, column batch_per_gpu: expected an empty cell beside micro_batch (give the batch one way: micro_batch "
        "and global_batch, or batch_per_gpu), got '4'");
  // Without micro_batch, batch_per_gpu is required as before (in the header and in the row).
  CHECK(problem_of("id,cluster,nodes,gpus,model,precision,strategy,compute,measured,unit\n"
                   "a,dgx-a100,1,8,gpt2,fp16,ddp,throughput=10,10,samples/s\n") ==
        "line 1: the header has no 'batch_per_gpu' column");
  CHECK(problem_of("id,cluster,nodes,gpus,model,precision,strategy,micro_batch,compute,measured,unit\n"
                   "a,dgx-a100,1,8,gpt2,fp16,ddp,,throughput=10,10,samples/s\n") ==
        "line 2, column batch_per_gpu: expected a whole number from 1 to 1048576, got ''");
  // A time with a global batch (samples/s) against a time without (the same work): not comparable.
  CHECK(problem_of(kMegatronHeader + kRow175b +
                   "full,sel,dgx-a100,A100-SXM4-80GB,8,64,megatron-gpt-175b,fp16,hybrid,8,8,1,,1f1b,full,false,false,"
                   "efficiency=0.5,18.13,s,test\n") ==
        "line 3, column global_batch: expected a global_batch in both this time and its baseline 'sel', or in neither "
        "(a time with its global batch is compared as samples/s)");
  // Ids: unique, and a baseline names an earlier row.
  const std::string ids_header = "id,baseline,cluster,gpu,nodes,gpus,model,precision,batch_per_gpu,strategy,compute,measured,unit\n";
  CHECK(problem_of(ids_header + "a,,dgx-a100,A100-SXM4-80GB,1,8,gpt2,fp16,4,ddp,efficiency=0.5,10,samples/s\n"
                                "a,,dgx-a100,A100-SXM4-80GB,2,16,gpt2,fp16,4,ddp,efficiency=0.5,19,samples/s\n") ==
        "line 3, column id: expected a unique, non-empty id, got 'a'");
  CHECK(problem_of(ids_header + ",,dgx-a100,A100-SXM4-80GB,1,8,gpt2,fp16,4,ddp,efficiency=0.5,10,samples/s\n") ==
        "line 2, column id: expected a unique, non-empty id, got ''");
  CHECK(problem_of(ids_header + "a,b,dgx-a100,A100-SXM4-80GB,1,8,gpt2,fp16,4,ddp,efficiency=0.5,10,samples/s\n"
                                "b,,dgx-a100,A100-SXM4-80GB,2,16,gpt2,fp16,4,ddp,efficiency=0.5,19,samples/s\n") ==
        "line 2, column baseline: expected the id of an earlier row, got 'b'");
  // schedule is for pipeline and hybrid only.
  CHECK(problem_of("id,cluster,nodes,gpus,model,precision,batch_per_gpu,strategy,schedule,compute,measured,unit\n"
                   "a,dgx-a100,1,8,gpt2,fp16,4,ddp,1f1b,throughput=10,10,samples/s\n") ==
        "line 2, column schedule: expected an empty cell for strategy 'ddp' (schedule is an option of pipeline and "
        "hybrid), got '1f1b'");
}

TEST_CASE("runs CSV: measured peak memory, the loss's dtype and kernel and the host's sync per micro-step")
{
  const std::string header =
      "id,cluster,gpu,nodes,gpus,model,precision,micro_batch,global_batch,strategy,compute,loss_dtype,loss_kernel,"
      "host_sync,measured,unit,peak_allocated_gib,peak_reserved_gib\n";
  const auto rows = read_training_runs(
      header + "a,hgx-h100,H100-SXM,1,8,gpt2,bf16,4,64,fsdp,efficiency=0.4,bf16,fused,micro_step,10,samples/s,30.5,\n",
      "m.csv");
  CHECK(rows[0].allocated_gib == 30.5);
  CHECK(rows[0].reserved_gib == 0);
  CHECK(rows[0].scenario["training"]["loss_dtype"] == "bf16");
  CHECK(rows[0].scenario["training"]["loss_kernel"] == "fused");
  CHECK(rows[0].scenario["training"]["host_sync"] == "micro_step");
  const Scenario s = parse_training_run(rows[0]);
  CHECK(s.training.host_sync_each_micro_step);

  // The table compares each measured figure with dtsim's peak of that kind, no baseline needed.
  TrainingRun run;
  run.id = "a";
  run.measured_allocated_gib = 40;
  run.predicted_allocated_gib = 42;
  run.measured_reserved_gib = 50;
  run.predicted_reserved_gib = 45;
  const std::string table = format_training_memory({run});
  CHECK(table.find("allocated") != std::string::npos);
  CHECK(table.find("+5.0%") != std::string::npos);
  CHECK(table.find("-10.0%") != std::string::npos);
  CHECK(table.find("# 2 memory figures: median |error| 7.5%, worst 10.0%") != std::string::npos);
  // Then the fits verdict over every measured run: each ran, so dtsim's peak must fit. A run not
  // measured is not known to have run: not judged.
  TrainingRun ran;
  ran.measured_rate = 10;
  CHECK(format_training_memory({ran}) == "# fits: dtsim's peak fits the GPU's memory on the one run, as it ran\n");
  CHECK(format_training_memory({ran, ran}) == "# fits: dtsim's peak fits the GPU's memory on all 2 runs, as each ran\n");
  TrainingRun oom = ran;
  oom.id = "big";
  oom.predicted_fits = false;
  oom.predicted_device_gib = 45.25;
  oom.capacity_gib = 40;
  CHECK(format_training_memory({ran, oom}) ==
        "# fits: dtsim's peak exceeds the GPU's memory on 1 of the 2 runs, though each ran: big (45.2 of 40.0 GiB)\n");
  CHECK(training_memory_json({oom})["not_fitting"][0]["id"] == "big");
  TrainingRun planned = oom;
  planned.measured_rate = 0;
  CHECK(format_training_memory({ran, planned}) == "# fits: dtsim's peak fits the GPU's memory on the one run, as it ran\n");
  CHECK(format_training_memory({planned}).empty());
  CHECK(training_memory_json({planned})["not_fitting"].empty());
  CHECK(training_memory_json({planned})["runs"] == 0);

  CHECK(problem_of(header + "a,hgx-h100,H100-SXM,1,8,gpt2,bf16,4,64,fsdp,efficiency=0.4,,,,10,samples/s,-3,\n") ==
        "line 2, column peak_allocated_gib: expected a number from 0.001 to 1000000, got '-3'");
  CHECK(problem_of(header + "a,hgx-h100,H100-SXM,1,8,gpt2,fp32,4,64,fsdp,efficiency=0.4,bf16,,,10,samples/s,,\n")
            .rfind("line 2, column loss_dtype: expected fp32 with training.precision fp32", 0) == 0);
  CHECK(problem_of(header + "a,hgx-h100,H100-SXM,1,8,gpt2,bf16,4,64,fsdp,efficiency=0.4,,,always,10,samples/s,,\n")
            .rfind("line 2, column host_sync: expected one of", 0) == 0);
  CHECK(problem_of(header + "a,hgx-h100,H100-SXM,1,8,gpt2,bf16,4,64,fsdp,efficiency=0.4,,liger,,10,samples/s,,\n")
            .rfind("line 2, column loss_kernel: expected one of", 0) == 0);

  // hold_logits: the loop keeps the model's output (training.hold_logits), true or false.
  const std::string held = "id,cluster,gpu,nodes,gpus,model,precision,micro_batch,global_batch,strategy,compute,"
                           "hold_logits,measured,unit\n";
  const auto kept = read_training_runs(held + "a,hgx-h100,H100-SXM,1,8,gpt2,bf16,4,64,fsdp,efficiency=0.4,true,10,"
                                              "samples/s\nb,hgx-h100,H100-SXM,1,8,gpt2,bf16,4,64,fsdp,efficiency=0.4,,10,"
                                              "samples/s\n",
                                       "h.csv");
  CHECK(kept[0].scenario["training"]["hold_logits"] == true);
  CHECK(parse_training_run(kept[0]).training.hold_logits);
  CHECK_FALSE(kept[1].scenario["training"].contains("hold_logits"));
  CHECK_FALSE(parse_training_run(kept[1]).training.hold_logits);
  CHECK(problem_of(held + "a,hgx-h100,H100-SXM,1,8,gpt2,bf16,4,64,fsdp,efficiency=0.4,yes,10,samples/s\n") ==
        "line 2, column hold_logits: expected true or false, got the string \"yes\"");

  // ranks: the simulator's folding of alike ranks (simulation.ranks), for rows below auto's 64 GPUs.
  const std::string folded = "id,cluster,gpu,nodes,gpus,model,precision,micro_batch,global_batch,strategy,compute,ranks,"
                             "measured,unit\n";
  const auto f = read_training_runs(
      folded + "a,hgx-h100,H100-SXM,4,32,gpt2,bf16,4,128,fsdp,efficiency=0.4,representatives,10,samples/s\n", "m.csv");
  CHECK(f[0].scenario["simulation"]["ranks"] == "representatives");
  CHECK(predicted_problem_of(folded + "a,hgx-h100,H100-SXM,4,32,gpt2,bf16,4,128,fsdp,efficiency=0.4,some,10,samples/s\n") ==
        "line 2, column ranks: expected one of auto, all, representatives, got \"some\"");
}

TEST_CASE("runs CSV: an error inside strategy_options names that column and the member's pointer in it")
{
  const std::string header =
      "id,cluster,gpu,nodes,gpus,model,precision,micro_batch,global_batch,strategy,compute,strategy_options,measured,unit\n";
  const auto row = [&](const std::string& options) {
    return header + "a,hgx-h100,H100-SXM,1,8,gpt2,bf16,4,64,fsdp,efficiency=0.4," + options + ",10,samples/s\n";
  };
  // Checked where the plan is built (the strategy reads its options), so through validate.
  CHECK(predicted_problem_of(row(R"("{""mixed_precision"": {""param_dtype"": 16}}")")) ==
        "line 2, column strategy_options: at /mixed_precision/param_dtype: expected a string, got 16");
  CHECK(predicted_problem_of(row(R"("{""version"": 3}")"))
            .rfind("line 2, column strategy_options: at /version: expected", 0) == 0);
  CHECK(problem_of(row(R"("{""no_sync"": true, ""no_sync"": false}")")) ==
        "line 2, column strategy_options: at /no_sync: member \"no_sync\" given twice (expected each member once)");
  // The strategy column itself keeps its name.
  CHECK(problem_of(header + "a,hgx-h100,H100-SXM,1,8,gpt2,bf16,4,64,fsdq,efficiency=0.4,,10,samples/s\n")
            .rfind("line 2, column strategy:", 0) == 0);
}

TEST_CASE("runs CSV: RFC 4180 quoting; a cell is quoted whole or not at all")
{
  const std::string header = "id,cluster,gpu,nodes,gpus,model,precision,micro_batch,global_batch,strategy,compute,measured,unit\n";
  const auto rows = read_training_runs(
      header + R"(  "a, b" ,hgx-h100,H100-SXM,1,8,gpt2,bf16, 4 ,64,fsdp,"efficiency=0.4",10,samples/s)" "\n", "q.csv");
  CHECK(rows[0].id == "a, b");
  CHECK(rows[0].scenario["training"]["micro_batch"] == 4);
  CHECK(problem_of(header + R"(a,hgx-h100,H100-SXM,1,8,gpt2,bf16,"4"0,64,fsdp,efficiency=0.4,10,samples/s)" "\n") ==
        "line 2: cell 8: text joined to a quoted part (expected a cell quoted whole, \"...\", or not quoted at all)");
  CHECK(problem_of(header + R"(a,hgx-h100,H100-SXM,1,8,gpt2,bf16,4"0",64,fsdp,efficiency=0.4,10,samples/s)" "\n")
            .rfind("line 2: cell 8: text joined to a quoted part", 0) == 0);
  CHECK(problem_of(header + R"(a,hgx-h100,H100-SXM,1,8,gpt2,bf16,4,64,fsdp,"efficiency=0.4,10,samples/s)" "\n") ==
        "line 2: a quoted cell is not closed on its line (expected \"...\" within one line: a cell holds no line break)");
}

TEST_CASE("a runs CSV is told from a measurement log by its header, whatever the file's name")
{
  const std::string header = "id,cluster,gpu,nodes,gpus,model,precision,micro_batch,global_batch,strategy,compute,measured,unit\n";
  CHECK(looks_like_training_runs(header));
  CHECK(looks_like_training_runs("\xEF\xBB\xBF# measured runs\n\n" + header));
  CHECK(looks_like_training_runs("# a comment\r\n" + header));
  CHECK_FALSE(looks_like_training_runs("id,cluster,gpu\n"));                 // no measured column
  CHECK_FALSE(looks_like_training_runs("id,measured,bandwidth_gbps\n"));     // a column runs CSVs do not have
  CHECK_FALSE(looks_like_training_runs("# nThread 1 nGpus 8 minBytes 8\n"));  // nccl-tests
  CHECK_FALSE(looks_like_training_runs("Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n"));
  CHECK_FALSE(looks_like_training_runs(""));
}

TEST_CASE("runs CSV: a measurement in tokens/s or tokens/s/gpu is samples/s by the model's sequence length")
{
  const std::string header = "id,baseline,cluster,gpu,nodes,gpus,model,precision,micro_batch,global_batch,strategy,"
                             "compute,measured,unit\n";
  const std::string llama = "\"{\"\"family\"\": \"\"llama\"\", \"\"hidden\"\": 1024, \"\"layers\"\": 2, \"\"heads\"\": 8, "
                            "\"\"seq_len\"\": 2048, \"\"vocab\"\": 32000}\"";
  const auto rows = read_training_runs(
      header + "a,,hgx-h100,H100-SXM,1,8," + llama + ",bf16,2,16,fsdp,efficiency=0.4,4096,tokens/s/gpu\n" +
          "b,a,hgx-h100,H100-SXM,2,16," + llama + ",bf16,2,32,fsdp,efficiency=0.4,61440,tokens/s\n",
      "t.csv");
  CHECK(rows[0].measured_in_tokens);
  CHECK(rows[0].measured_rate == 4096.0 * 8);  // the whole job's tokens/s until the model is loaded
  CHECK(rows[1].measured_rate == 61440);

  const auto path = std::filesystem::temp_directory_path() / fmt::format("dtsim-tokens-{}.csv", ::getpid());
  {
    std::ofstream(path) << header + "a,,hgx-h100,H100-SXM,1,8," + llama + ",bf16,2,16,fsdp,efficiency=0.4,4096,tokens/s/gpu\n" +
                               "b,a,hgx-h100,H100-SXM,2,16," + llama + ",bf16,2,32,fsdp,efficiency=0.4,61440,tokens/s\n";
  }
  const auto runs = validate_training_runs(path.string());
  std::filesystem::remove(path);
  CHECK(runs[0].measured_rate == doctest::Approx(4096.0 * 8 / 2048));  // 16 samples/s
  CHECK(runs[1].measured_rate == doctest::Approx(61440.0 / 2048));     // 30 samples/s
  CHECK(runs[1].measured_ratio == doctest::Approx(30.0 / 16));

  CHECK(problem_of(header + "a,,hgx-h100,H100-SXM,1,8,gpt2,bf16,2,16,fsdp,efficiency=0.4,4096,tokens\n") ==
        "line 2, column unit: expected 'samples/s', 's', 'tokens/s' or 'tokens/s/gpu', got 'tokens'");
  CHECK(predicted_problem_of(header + "a,,dgx-a100,A100-SXM4-80GB,1,8,resnet50,amp,32,256,ddp,efficiency=0.4,9000,tokens/s\n") ==
        "line 2, column unit: expected a model with a sequence length (seq_len) to count its samples in tokens, got the "
        "model 'resnet50' without one (give samples/s)");
}
