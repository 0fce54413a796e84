// dtsim sweep SCENARIO.json [--gpus 1,2,4,8] [--vary key.path=V1,V2,... ...] [--set key.path=value ...]
//             [--csv FILE] [--json] [--html FILE] [-j N] [--emit DIR]
// dtsim sweep --collect DIR [--csv FILE] [--json] [--html FILE]
// The same scenario over a grid of values (every combination of the --vary lists; --gpus is
// --vary gpus=...): how many GPUs until communication eats the gain, what a faster network buys.
#include "tools/cli/command.hpp"
#include "tools/cli/html_options.hpp"
#include "tools/cli/sweep_grid.hpp"
#include "tools/cli/sweep_runner.hpp"

#include "sim/report/html_report.hpp"
#include "sim/report/json_report.hpp"
#include "sim/report/memory_report.hpp"
#include "sim/util/atomic_file.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/number_text.hpp"
#include "sim/util/one_line.hpp"
#include "sim/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>

namespace dtsim::cli {

namespace {

/// Most GPUs of one point (as make_grid's check of a --vary gpus value).
constexpr std::int64_t kMaxSweepGpus = 1 << 20;

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> gpus;  ///< as given: each a comma-separated list
  std::vector<std::string> vary;
  std::string csv;
  bool json = false;
  std::string html;
  int jobs = 1;
  std::string emit, collect;
  std::vector<std::string> sets;
};

std::string cell(const nlohmann::json& v)
{
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// CSV field: quoted when it holds a comma, a quote or a newline (RFC 4180).
std::string csv_field(const std::string& s)
{
  if (s.find_first_of(",\"\n") == std::string::npos)
    return s;
  std::string out = "\"";
  for (const char c : s)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

/// With training.loader.workers the only varied field (issue 32): the knee, the fewest workers whose
/// throughput is within 1% of the best point's; "" otherwise.
std::string workers_knee(const std::vector<std::string>& varied, const std::vector<nlohmann::json>& values,
                         const std::vector<nlohmann::json>& rows)
{
  constexpr const char* kWorkers = "training.loader.workers";
  if (varied.size() != 1 || varied.front() != kWorkers || rows.size() < 2)
    return "";
  double best = 0;
  for (const auto& r : rows)
    best = std::max(best, r.value("throughput_samples_per_s", 0.0));
  int knee = -1;
  int most = -1;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& w = values[i].value(kWorkers, nlohmann::json());
    if (!w.is_number_integer())
      return "";
    most = std::max(most, w.get<int>());
    if (rows[i].value("throughput_samples_per_s", 0.0) >= 0.99 * best && (knee < 0 || w.get<int>() < knee))
      knee = w.get<int>();
  }
  if (knee == most)
    return fmt::format("knee: not reached: throughput still rises at {} workers per process, the most varied ({:.1f} "
                       "samples/s)\n",
                       most, best);
  return fmt::format("knee: {} workers per process reach {:.1f} samples/s, within 1% of the best; more workers stop "
                     "helping (the run's host: line says why)\n",
                     knee, best);
}

/// The batch line under the table: the largest value of batch_field whose every GPU fits, one figure
/// for a sweep over the batch alone (one group, named ""), else one per combination of the other
/// varied fields ("at model.seq_len=1024: 39; at model.seq_len=2048: 38", none where nothing fits).
/// `where`: "every GPU", or "every GPU and host" where the verdict weighs an offload's host memory.
std::string largest_batch_line(const std::string& batch_field, const std::vector<std::pair<std::string, double>>& groups,
                               const std::string& where)
{
  const bool any = std::any_of(groups.begin(), groups.end(), [](const auto& g) { return g.second > 0; });
  if (!any)
    return fmt::format("no {} swept fits {}", batch_field, where);
  if (groups.size() == 1 && groups.front().first.empty())
    return fmt::format("largest {} that fits {}: {:g}", batch_field, where, groups.front().second);
  std::string out = fmt::format("largest {} that fits {}:", batch_field, where);
  for (std::size_t i = 0; i < groups.size(); ++i)
    out += fmt::format("{} at {}: {}", i == 0 ? "" : ";", groups[i].first,
                       groups[i].second > 0 ? fmt::format("{:g}", groups[i].second) : std::string("none"));
  return out;
}

// The --csv and --html files, written together (all or none).
void write_outputs(const SweepArgs& args, const std::vector<std::string>& varied, const std::vector<std::string>& columns,
                   const std::vector<nlohmann::json>& values, const std::vector<nlohmann::json>& rows)
{
  std::vector<std::pair<std::string, std::string>> outputs;
  if (!args.csv.empty()) {
    std::string csv;
    for (const auto& c : columns)
      csv += csv_field(c) + ",";
    csv += "gpus,nodes,iteration_time_s,compute_time_s,comm_time_s,exposed_comm_time_s,"
           "throughput_samples_per_s,speedup_vs_1gpu,scaling_efficiency,epoch_time_s,total_time_days,"
           "ideal_linear_total_days,host_step_s,memory_GiB,fits,pipeline_bubble_s\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (const auto& c : columns)
        csv += csv_field(cell(values[i].value(c, nlohmann::json()))) + ",";
      const auto& r = rows[i];
      // memory_GiB and fits as the text table shows them (device_memory_of); empty where a result has none.
      // pipeline_bubble_s (last, added after the others): empty where the point has no pipeline.
      const DeviceMemoryFigures mem = device_memory_of(r);
      const auto bubble = pipeline_bubble_of(r);
      csv += fmt::format("{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{},{}\n", r.value("gpus", 0),
                         r.value("nodes_used", 0), r.value("iteration_time_s", 0.0), r.value("compute_time_s", 0.0),
                         r.value("comm_time_s", 0.0), r.value("exposed_comm_time_s", 0.0),
                         r.value("throughput_samples_per_s", 0.0), r.value("speedup_vs_1gpu", 0.0),
                         r.value("scaling_efficiency", 0.0), r.value("epoch_time_s", 0.0), r.value("total_time_days", 0.0),
                         r.value("ideal_linear_total_days", 0.0), r.value("host_step_s", 0.0),
                         mem.known ? fmt::format("{:.4f}", mem.busiest_bytes / (1024.0 * 1024 * 1024)) : "",
                         mem.known ? (mem.fits ? "yes" : "no") : "", bubble ? fmt::format("{:.9g}", *bubble) : "");
    }
    outputs.emplace_back(args.csv, csv);
  }
  if (!args.html.empty()) {
    HtmlReportInput in;
    in.title = fmt::format("dtsim sweep: {}", rows.front().value("scenario", ""));
    in.command = command_line();
    in.varied = varied;
    const bool gpus_only = varied.size() == 1 && varied.front() == "gpus";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (gpus_only)
        in.scaling.push_back(rows[i]);
      else
        in.sweep.push_back({values[i], rows[i]});
    }
    outputs.emplace_back(args.html, html_report(in));
  }
  write_files_atomically(outputs);
}

void print_outputs(const SweepArgs& args, const std::vector<std::string>& varied, const std::vector<nlohmann::json>& values,
                   const std::vector<nlohmann::json>& rows)
{
  std::vector<std::string> columns;  // varied fields shown before the fixed columns (gpus has its own)
  for (const auto& f : varied)
    if (f != "gpus")
      columns.push_back(f);
  write_outputs(args, varied, columns, values, rows);  // first: a write that fails leaves nothing printed
  if (args.json) {
    nlohmann::json points = nlohmann::json::array();
    for (std::size_t i = 0; i < rows.size(); ++i)
      points.push_back({{"values", values[i]}, {"result", rows[i]}});
    fmt::print("{}\n", nlohmann::json{{"scenario", rows.front().value("scenario", "")}, {"varied", varied}, {"points", points}}.dump(2));
  } else {
    const auto& r0 = rows.front();
    fmt::print("dtsim sweep: {} ({} on {})\n", r0.value("scenario", ""), r0.value("strategy", ""), r0.value("topology", ""));
    for (const auto& c : columns)
      fmt::print("{:>{}} ", c, std::max<std::size_t>(c.size(), 8));
    // host_s, only where an offloaded optimizer steps on the host (the GPU idle, not exposed communication).
    const bool host_column = std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.value("host_step_s", 0.0) > 0; });
    // bubble_s, where a point is pipelined: the fill and drain every stage waits for (run's "pipeline bubble").
    const bool bubble_column = any_pipeline_bubble(rows);
    fmt::print("{:>6} {:>6} {:>14} {:>14} {}{}{:>14} {:>10} {:>10} {:>12} {:>11} {:>4}\n", "gpus", "nodes", "iteration_s",
               "exposed_comm_s", bubble_column ? fmt::format("{:>10} ", "bubble_s") : "",
               host_column ? fmt::format("{:>10} ", "host_s") : "", "samples/s", "speedup", "efficiency", "total_days",
               "memory_GiB", "fits");
    // The batch fields: a sweep over one of them says the largest value whose every GPU fits; with
    // other fields varied too, for each combination of their values (a batch that fits at one
    // seq_len may not at another).
    std::string batch_field;
    for (const auto& c : columns)
      if (c == "training.batch_per_gpu" || c == "training.micro_batch")
        batch_field = c;
    std::vector<std::string> others;  // the other varied fields, gpus among them
    for (const auto& f : varied)
      if (f != batch_field)
        others.push_back(f);
    std::vector<std::pair<std::string, double>> largest_fitting;  // per combination of the others, in sweep order
    bool host_weighed = false;  // some point's verdict counts the host's memory (an offload): the line says so
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (const auto& c : columns)
        fmt::print("{:>{}} ", cell(values[i].value(c, nlohmann::json())), std::max<std::size_t>(c.size(), 8));
      const auto& r = rows[i];
      // The busiest GPU's device memory (memory.per_gpu[].device_used_bytes; a result written before
      // it existed has total_bytes only).
      const DeviceMemoryFigures mem = device_memory_of(r);
      const double used = mem.busiest_bytes;
      const bool fits = mem.fits;
      host_weighed = host_weighed || mem.host_weighed;
      const auto bubble = pipeline_bubble_of(r);
      const std::string bubble_cell =
          !bubble_column ? "" : bubble ? fmt::format("{:>10.6f} ", *bubble) : fmt::format("{:>10} ", "");
      fmt::print("{:>6} {:>6} {:>14.6f} {:>14.6f} {}{}{:>14.1f} {:>10.2f} {:>9.1f}% {:>12.3f} {:>11.2f} {:>4}\n",
                 r.value("gpus", 0), r.value("nodes_used", 0), r.value("iteration_time_s", 0.0),
                 r.value("exposed_comm_time_s", 0.0), bubble_cell,
                 host_column ? fmt::format("{:>10.6f} ", r.value("host_step_s", 0.0)) : "", r.value("throughput_samples_per_s", 0.0),
                 r.value("speedup_vs_1gpu", 0.0), r.value("scaling_efficiency", 0.0) * 100,
                 r.value("total_time_days", 0.0), used / (1024.0 * 1024 * 1024), fits ? "yes" : "no");
      if (batch_field.empty())
        continue;
      std::string at;  // "model.seq_len=1024, gpus=8"
      for (const auto& o : others)
        if (const auto x = values[i].find(o); x != values[i].end())
          at += (at.empty() ? "" : ", ") + o + "=" + cell(*x);
      auto group = std::find_if(largest_fitting.begin(), largest_fitting.end(), [&](const auto& g) { return g.first == at; });
      if (group == largest_fitting.end())
        group = largest_fitting.insert(largest_fitting.end(), {at, 0.0});
      const auto v = values[i].find(batch_field);
      if (fits && v != values[i].end() && v->is_number())
        group->second = std::max(group->second, v->get<double>());
    }
    if (!batch_field.empty())
      fmt::print("{}\n", largest_batch_line(batch_field, largest_fitting, host_weighed ? "every GPU and host" : "every GPU"));
    fmt::print("{}", workers_knee(varied, values, rows));
  }
}

int run_sweep(const SweepArgs& args)
{
  std::vector<std::pair<std::string, std::string>> outputs;  // checked before any point runs
  if (!args.csv.empty())
    outputs.emplace_back(args.csv, "--csv");
  if (!args.html.empty())
    outputs.emplace_back(args.html, "--html");
  std::vector<std::string> inputs;
  if (!args.scenario.empty())
    inputs.push_back(args.scenario);
  if (!args.collect.empty())
    inputs.push_back((std::filesystem::path(args.collect) / "manifest.json").string());
  check_output_paths(outputs, inputs);
  if (!args.collect.empty()) {
    // The sweep's other files (its points, jobs.txt, slurm.sh) are not read by --collect but are the
    // sweep: an output written onto one would destroy it.
    namespace fs = std::filesystem;
    std::vector<fs::path> sweep_files = {fs::path(args.collect) / "jobs.txt", fs::path(args.collect) / "slurm.sh"};
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::path(args.collect) / "points", ec))
      sweep_files.push_back(entry.path());
    for (const auto& [path, flag] : outputs)
      for (const auto& f : sweep_files) {
        std::error_code same_ec;
        if (fs::is_regular_file(f, same_ec) && fs::equivalent(f, path, same_ec))
          throw InputError(path, "", fmt::format("is a file of the sweep in {} (expected a file path outside its points/, "
                                                 "jobs.txt and slurm.sh, for {})",
                                                 args.collect, flag));
      }
  }
  if (!args.collect.empty()) {
    if (!args.scenario.empty() || !args.vary.empty() || !args.gpus.empty() || !args.emit.empty())
      throw InputError("command line", "", "--collect DIR takes no scenario, --vary, --gpus or --emit");
    const auto c = collect_sweep(args.collect);
    if (c.results.empty())
      throw InputError(args.collect, "", "the sweep has no points");
    print_outputs(args, c.varied, c.values, c.results);
    return 0;
  }
  if (args.scenario.empty())
    throw InputError("command line", "", "sweep expects a scenario file (or --collect DIR)");
  // The folder's name goes into jobs.txt and slurm.sh: a newline there splits a job in two.
  if (has_control_character(args.emit, true))
    throw InputError("--emit", "", fmt::format("expected a folder name without control characters (a newline, a tab, an "
                                               "escape), got \"{}\"",
                                               args.emit));
  std::vector<Override> base;
  for (const auto& s : args.sets)
    base.push_back(parse_override(s));
  std::vector<VariedField> fields;
  std::vector<std::string> varied;
  if (!args.gpus.empty()) {
    VariedField f{"gpus", {}};
    for (const auto& list : args.gpus) {
      for (const auto& t : split_trimmed(list, ',')) {  // an empty piece kept (and refused), as --vary's
        if (t.empty())
          throw InputError("--gpus", "", fmt::format("expected positive GPU counts such as 1,2,4,8, got an empty value in \"{}\"", list));
        const auto n = parse_int(t, 1, kMaxSweepGpus);
        if (!n)
          throw InputError("--gpus", "", fmt::format("expected positive GPU counts up to {}, got {}", kMaxSweepGpus, t));
        f.values.push_back(std::to_string(*n));
      }
    }
    fields.push_back(f);
    for (const auto& o : base)  // as make_grid refuses a --vary key that undoes a --set one
      if (override_replaces("gpus", o.path))
        throw InputError("--gpus", "", fmt::format("would undo --set {} at every point: give the GPU counts by --gpus or "
                                                   "by --set, not both",
                                                   o.path));
  }
  for (const auto& v : args.vary) {
    fields.push_back(parse_vary(v));
    if (fields.back().path == "gpus" && !args.gpus.empty())
      throw InputError("--vary", "", "gpus is varied by --gpus already");
  }
  if (fields.empty())
    throw InputError("command line", "", "sweep expects --gpus LIST or at least one --vary key.path=V1,V2,...");
  for (const auto& f : fields)
    varied.push_back(f.path);
  const auto grid = make_grid(args.scenario, base, fields);
  if (!args.emit.empty()) {
    emit_sweep(args.emit, args.scenario, varied, grid);
    fmt::print("dtsim sweep: wrote {} points to {}: run `parallel < {}/jobs.txt` (GNU parallel) or `sbatch {}/slurm.sh`, "
               "then `dtsim sweep --collect {}`\n",
               grid.size(), args.emit, args.emit, args.emit, args.emit);
    return 0;
  }
  std::vector<std::vector<Override>> points;
  for (const auto& p : grid)
    points.push_back(p.overrides);
  const auto outcomes = run_points(args.scenario, points, args.jobs);
  std::vector<nlohmann::json> values, rows;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].exit_code == 2)
      throw InputError("sweep point " + grid[i].values.dump(), "", outcomes[i].error);
    if (outcomes[i].exit_code != 0)
      throw std::runtime_error(outcomes[i].error);
    values.push_back(grid[i].values);
    rows.push_back(outcomes[i].result);
  }
  print_outputs(args, varied, values, rows);
  return 0;
}

}  // namespace

void add_sweep_command(CLI::App& app, Action& action)
{
  auto args = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand("sweep", "Predict one scenario over a grid of values (GPU counts, any field)");
  cmd->add_option("scenario", args->scenario, "Scenario file (JSON)");
  // Split by run_sweep, not CLI11 (whose delimiter drops an empty piece: "8,,16" read as 8,16).
  cmd->add_option("--gpus", args->gpus, "GPU counts, comma-separated (as --vary gpus=...)");
  cmd->add_option("--vary", args->vary,
                  "key.path=V1,V2,...: a field and its values; several --vary make a grid; cluster.nodes follows "
                  "gpus unless set")
      ->take_all();
  cmd->add_option("--set", args->sets, "Override a scenario field (as in dtsim run)")->take_all();
  auto* csv = cmd->add_option("--csv", args->csv, "Also write the table as CSV");
  auto* json = cmd->add_flag("--json", args->json, "Print the points and their figures as JSON");
  auto* html = cmd->add_option("--html", args->html, "Also write an HTML page: the scaling curve, or one plot per varied field");
  auto* jobs = cmd->add_option("-j,--jobs", args->jobs, "processes running points at once (default 1)")->check(CLI::Range(1, 256));
  cmd->add_option("--emit", args->emit,
                  "write the points to DIR (scenario files, GNU parallel jobs.txt, Slurm slurm.sh) instead of running them")
      ->excludes(csv)
      ->excludes(html)
      ->excludes(json)
      ->excludes(jobs);  // the table, the page and the figures come from --collect; the jobs run elsewhere
  cmd->add_option("--collect", args->collect, "gather the results of an --emit DIR whose jobs have run");
  cmd->callback([&action, args] { action = [args] { return run_sweep(*args); }; });
}

}  // namespace dtsim::cli
