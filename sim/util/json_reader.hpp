// Typed, validated access to a JSON document that remembers where each value came from, so that
// every error names the file, the JSON pointer and what was expected.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtsim {

/// Reads and parses a JSON file; throws InputError (missing file, malformed JSON with line/column).
nlohmann::json load_json_file(const std::string& path);

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
  std::int64_t as_int() const;
  std::int64_t as_positive_int() const;
  bool as_bool() const;
  /// A string that must be one of `allowed`.
  std::string as_choice(const std::vector<std::string>& allowed) const;

  /// Rejects members not in `known` (catches typos such as "batch_per_gpus").
  void reject_unknown(const std::vector<std::string>& known) const;
  /// Throws an InputError at this value.
  [[noreturn]] void fail(const std::string& problem) const;

  // Convenience: optional members with defaults.
  std::string string_or(const std::string& key, const std::string& fallback) const;
  double number_or(const std::string& key, double fallback) const;
  double positive_or(const std::string& key, double fallback) const;
  std::int64_t positive_int_or(const std::string& key, std::int64_t fallback) const;
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
