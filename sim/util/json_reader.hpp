// Typed, validated access to a JSON document that remembers where each value came from, so that
// every error names the file, the JSON pointer and what was expected.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtsim {

/// Reads and parses a JSON file; throws InputError (missing file, a directory, malformed JSON with
/// line/column, a number beyond a double, nesting deeper than kMaxJsonDepth).
nlohmann::json load_json_file(const std::string& path);
/// Parses JSON text read from `path` with the checks of load_json_file.
nlohmann::json parse_json_text(const std::string& text, const std::string& path);

/// Deepest nesting accepted: dtsim's files nest 5 levels; deeper input is not one of them, and the
/// recursive walks of a document (dump, comparison) must not exhaust the stack.
constexpr int kMaxJsonDepth = 64;

/// Largest magnitude of any number read: no quantity dtsim reads comes near it (FLOPs of a layer for
/// one sample of the largest models are ~1e15), and sums of such numbers stay finite.
constexpr double kMaxJsonMagnitude = 1e18;

class JsonReader {
public:
  JsonReader(const nlohmann::json& value, std::string file, std::string pointer = "");

  const nlohmann::json& json() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }

  bool is_object() const { return value_->is_object(); }
  bool has(const std::string& key) const;

  /// The member `key`; throws if it is missing (or if this is not an object).
  JsonReader at(const std::string& key) const;
  std::optional<JsonReader> find(const std::string& key) const;
  /// Elements of an array (throws if this is not an array).
  std::vector<JsonReader> items() const;
  /// Members of an object in document order of nlohmann (sorted by key).
  std::vector<std::pair<std::string, JsonReader>> members() const;

  std::string as_string() const;
  double as_number() const;
  double as_positive() const;       // > 0
  double as_non_negative() const;   // >= 0
  /// A number in (0, max]: physical quantities with a bound well above any real machine.
  double as_positive_at_most(double max) const;
  /// A number in [lo, hi]: a quantity whose physical range bounds it on both sides.
  double as_number_in(double lo, double hi) const;
  std::int64_t as_int() const;
  std::int64_t as_positive_int() const;
  /// An integer in [lo, hi] (a count that becomes an int, an index): outside it, an error naming both.
  std::int64_t as_int_in(std::int64_t lo, std::int64_t hi) const;
  /// A positive integer of at most `max` (default: what an int holds), as an int.
  int as_count(int max = 2147483647) const;
  bool as_bool() const;
  /// A string that must be one of `allowed`.
  std::string as_choice(const std::vector<std::string>& allowed) const;

  /// Rejects members not in `known` (catches typos such as "batch_per_gpus").
  void reject_unknown(const std::vector<std::string>& known) const;
  /// Throws an InputError at this value.
  [[noreturn]] void fail(const std::string& problem) const;
  /// Throws at member `key` with `if_given` when the member is given, else at this value with
  /// `if_default`: a limit that the member's default broke, which that message names.
  [[noreturn]] void fail_member_or_here(const std::string& key, const std::string& if_given,
                                        const std::string& if_default) const;

  // Convenience: optional members with defaults.
  std::string string_or(const std::string& key, const std::string& fallback) const;
  double number_or(const std::string& key, double fallback) const;
  double positive_or(const std::string& key, double fallback) const;
  std::int64_t positive_int_or(const std::string& key, std::int64_t fallback) const;
  int count_or(const std::string& key, int fallback, int max = 2147483647) const;
  bool bool_or(const std::string& key, bool fallback) const;

private:
  const nlohmann::json* value_;
  std::string file_;
  std::string pointer_;
};

/// Escapes a key for use in a JSON pointer (RFC 6901: ~ -> ~0, / -> ~1).
std::string json_pointer_escape(const std::string& key);

/// A short description of a JSON value for error messages ("the string \"abc\"", "a number (-3)").
std::string describe_json(const nlohmann::json& value);

}  // namespace dtsim
