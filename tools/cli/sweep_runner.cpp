#include "tools/cli/sweep_runner.hpp"

#include "sim/predict/predict.hpp"
#include "sim/report/json_report.hpp"
#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace dtsim::cli {

namespace {

PointOutcome run_point(const std::string& scenario, const std::vector<Override>& overrides)
{
  try {
    return {json_report(predict(load_scenario(scenario, overrides)).result), "", 0};
  } catch (const InputError& e) {
    return {nullptr, e.what(), 2};
  } catch (const std::exception& e) {
    return {nullptr, fmt::format("internal error: {}", e.what()), 1};
  }
}

class Progress {
public:
  explicit Progress(std::size_t total) : total_(total), tty_(::isatty(2) == 1), start_(std::chrono::steady_clock::now()) {}
  void done(std::size_t finished)
  {
    if (!tty_)
      return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double eta = finished ? elapsed / static_cast<double>(finished) * static_cast<double>(total_ - finished) : 0;
    // fputs: progress that cannot be shown (stderr closed) is no reason to stop (fmt::print would throw)
    const std::string progress =
        fmt::format("\rdtsim: {}/{} points done, {:.0f} s elapsed, ETA {:.0f} s   ", finished, total_, elapsed, eta);
    std::fputs(progress.c_str(), stderr);
    if (finished == total_)
      std::fputs("\n", stderr);
  }

private:
  std::size_t total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
};

std::string read_all(const std::filesystem::path& p)
{
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::vector<PointOutcome> run_points(const std::string& scenario, const std::vector<std::vector<Override>>& points,
                                     int jobs)
{
  std::vector<PointJob> all;
  for (const auto& o : points)
    all.push_back({scenario, o});
  return run_points(all, jobs);
}

std::vector<PointOutcome> run_points(const std::vector<PointJob>& points, int jobs)
{
  std::vector<PointOutcome> out(points.size());
  Progress progress(points.size());
  if (jobs <= 1 || points.size() <= 1) {
    for (std::size_t i = 0; i < points.size(); ++i) {
      out[i] = run_point(points[i].scenario, points[i].overrides);
      progress.done(i + 1);
    }
    return out;
  }
  // One process per point, at most `jobs` at a time; each leaves its result in a file of its own.
  namespace fs = std::filesystem;
  std::string pattern = (fs::temp_directory_path() / "dtsim-sweep-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error("cannot create a temporary directory for the sweep");
  const fs::path dir = pattern;
  std::map<pid_t, std::size_t> running;
  std::size_t next = 0, finished = 0;
  std::fflush(nullptr);
  while (finished < points.size()) {
    while (next < points.size() && static_cast<int>(running.size()) < jobs) {
      const pid_t pid = ::fork();
      if (pid < 0)
        throw std::runtime_error("fork failed");
      if (pid == 0) {
        const PointOutcome o = run_point(points[next].scenario, points[next].overrides);
        std::ofstream(dir / fmt::format("{}.json", next)) << (o.exit_code == 0 ? o.result.dump() : o.error);
        ::_exit(o.exit_code);
      }
      running[pid] = next++;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0)
      throw std::runtime_error("waitpid failed");
    const auto it = running.find(pid);
    if (it == running.end())
      continue;
    const std::size_t i = it->second;
    running.erase(it);
    const std::string text = read_all(dir / fmt::format("{}.json", i));
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code == 0)
      out[i] = {nlohmann::json::parse(text), "", 0};
    else
      out[i] = {nullptr, text.empty() ? "internal error: the point's process died" : text, code == 2 ? 2 : 1};
    progress.done(++finished);
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return out;
}

std::vector<int> powers_of_two_up_to(int gpus)
{
  std::vector<int> out;
  for (int n = 1; n < gpus; n *= 2)
    out.push_back(n);
  out.push_back(gpus);
  return out;
}

}  // namespace dtsim::cli
