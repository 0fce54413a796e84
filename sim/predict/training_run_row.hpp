// One row of a runs CSV (training_runs.hpp) as read: its cells by column, checked one at a time with
// errors that name the CSV, the line and the column; and the scenario a row becomes.
#pragma once

#include "sim/util/input_error.hpp"
#include "sim/util/number_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>

namespace dtsim {

struct RunsCsvRow {
  std::string file;
  int line = 0;
  std::map<std::string, std::string> cells;

  std::string get(const std::string& column) const
  {
    const auto it = cells.find(column);
    return it == cells.end() ? std::string() : it->second;
  }
  [[noreturn]] void fail(const std::string& column, const std::string& problem) const
  {
    throw InputError(file, "", fmt::format("line {}, column {}: {}", line, column, problem));
  }
  double number(const std::string& column, double low, double high) const
  {
    return number_in(column, get(column), low, high);
  }
  double number_in(const std::string& column, const std::string& text, double low, double high) const
  {
    const auto v = parse_double(text);
    if (!v || *v < low || *v > high)
      fail(column, fmt::format("expected a number from {} to {}, got '{}'", low, high, text));
    return *v;
  }
  /// "true" or "false" (blank cells are the caller's: not given).
  bool boolean(const std::string& column) const
  {
    const std::string v = get(column);
    if (v != "true" && v != "false")
      fail(column, fmt::format("expected true or false, got '{}'", v));
    return v == "true";
  }
  int integer(const std::string& column, int low, int high) const
  {
    const auto v = parse_int(get(column), low, high);
    if (!v)
      fail(column, fmt::format("expected a whole number from {} to {}, got '{}'", low, high, get(column)));
    return static_cast<int>(*v);
  }
  /// A non-empty cell (the value is checked where it is used: a preset, a model, a strategy).
  std::string required(const std::string& column, const std::string& expected) const
  {
    const std::string v = get(column);
    if (v.empty())
      fail(column, fmt::format("expected {}, got an empty cell", expected));
    return v;
  }
  /// A .json file named by the cell, relative to the CSV's folder and inside it; other text as is.
  std::string file_in(const std::string& column, const std::string& csv_dir) const
  {
    const std::string v = get(column);
    if (v.size() < 5 || v.compare(v.size() - 5, 5, ".json") != 0)
      return v;
    const std::filesystem::path rel = std::filesystem::path(v).lexically_normal();
    if (rel.is_absolute() || rel.empty() || *rel.begin() == "..")
      fail(column, fmt::format("expected a .json file inside the CSV's folder (a path relative to it, without ..), got '{}'", v));
    const std::filesystem::path path = std::filesystem::path(csv_dir) / rel;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      fail(column, fmt::format("no file '{}' in the CSV's folder (expected a .json file beside the CSV, or a preset name)", v));
    return path.string();
  }
};

/// The compute cell's `efficiency=calibrate` value: the efficiency validate finds (training_runs.hpp).
inline const std::string kCalibrate = "calibrate";

/// The scenario (JSON, not yet parsed) of a row: cluster, model, training and strategy from its
/// columns; errors name the row's column.
nlohmann::json scenario_of(const RunsCsvRow& row, const std::string& csv_dir);

/// "mb4" / "batch 256" and the like, for the row's summary.
std::string batch_summary(const RunsCsvRow& row);

}  // namespace dtsim
