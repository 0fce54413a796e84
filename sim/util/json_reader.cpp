#include "sim/util/json_reader.hpp"
#include "sim/util/did_you_mean.hpp"

#include "sim/util/input_error.hpp"
#include "sim/util/text_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

namespace dtsim {

nlohmann::json load_json_file(const std::string& path)
{
  return parse_json_text(read_input_file(path, "a JSON file"), path);
}

namespace {

/// Builds the document as nlohmann's own parser does, and refuses nesting deeper than kMaxJsonDepth
/// (the recursive walks of a document must not exhaust the stack) and a member given twice in one
/// object (nlohmann keeps the last one silently). nlohmann's callback parser could check both, but
/// it scans the elements of an array at the end of each object in it: quadratic (a model of
/// 300,000 layers took minutes).
class CheckedBuilder : public nlohmann::json::json_sax_t {
public:
  CheckedBuilder(nlohmann::json& root, const std::string& path) : root_(root), path_(path) {}

  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t&) override { return put(v); }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t&) override { return false; }  // JSON text has none
  bool start_object(std::size_t) override { return open(nlohmann::json::object()); }
  bool start_array(std::size_t) override { return open(nlohmann::json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override
  {
    if (open_.back()->contains(k))
      throw InputError(path_, pointer() + "/" + json_pointer_escape(k),
                       fmt::format("member {} given twice (expected each member once)", nlohmann::json(k).dump()));
    keys_.back() = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override
  {
    error_byte = position;
    error_id = e.id;
    return false;
  }

  std::size_t error_byte = 0;
  int error_id = 0;

private:
  nlohmann::json& root_;
  const std::string& path_;
  std::vector<nlohmann::json*> open_;  // the open objects and arrays, outermost first
  std::vector<std::string> keys_;      // for each, the key of the member being read (objects)

  nlohmann::json* place(nlohmann::json v)
  {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    nlohmann::json& parent = *open_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    return &(parent[keys_.back()] = std::move(v));
  }
  bool put(nlohmann::json v)
  {
    place(std::move(v));
    return true;
  }
  bool open(nlohmann::json container)
  {
    if (open_.size() >= static_cast<std::size_t>(kMaxJsonDepth))
      throw InputError(path_, "", fmt::format("JSON nested deeper than {} levels (expected a dtsim input file)", kMaxJsonDepth));
    open_.push_back(place(std::move(container)));
    keys_.emplace_back();
    return true;
  }
  bool close()
  {
    open_.pop_back();
    keys_.pop_back();
    return true;
  }
  /// The JSON pointer of the innermost open object or array.
  std::string pointer() const
  {
    std::string out;
    for (std::size_t i = 0; i + 1 < open_.size(); ++i)
      out += "/" + (open_[i]->is_array() ? std::to_string(open_[i]->size() - 1) : json_pointer_escape(keys_[i]));
    return out;
  }
};

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& path)
{
  // Byte offset `upto` (0-based) as line:column, which is what an editor shows.
  const auto where = [&text](std::size_t upto) {
    upto = std::min(upto, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(upto), '\n');
    const auto last_nl = text.rfind('\n', upto == 0 ? 0 : upto - 1);
    const auto column = last_nl == std::string::npos || upto == 0 ? upto + 1 : upto - last_nl;
    return fmt::format("line {}, column {}", line, column);
  };
  // nlohmann's lexer takes a NUL byte for the end of the input and would ignore what follows it.
  if (const auto nul = text.find('\0'); nul != std::string::npos)
    throw InputError(path, "", fmt::format("a NUL byte at {} (expected JSON text)", where(nul)));
  nlohmann::json doc;
  CheckedBuilder builder(doc, path);
  if (nlohmann::json::sax_parse(text, &builder))
    return doc;
  if (builder.error_id == 406)  // out_of_range.406: a number beyond a double
    throw InputError(path, "", "a number too large for a double (expected finite numbers, at most 1.8e308)");
  const std::size_t byte = builder.error_byte;
  throw InputError(path, "", fmt::format("malformed JSON at {} (expected valid JSON)", where(byte == 0 ? 0 : byte - 1)));
}

std::string json_pointer_escape(const std::string& key)
{
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string describe_json(const nlohmann::json& value)
{
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return fmt::format("the boolean {}", value.dump());
    case nlohmann::json::value_t::string: return fmt::format("the string {}", value.dump());
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::object: return "an object";
    default: return fmt::format("{}", value.dump());
  }
}

JsonReader::JsonReader(const nlohmann::json& value, std::string file, std::string pointer)
    : value_(&value), file_(std::move(file)), pointer_(std::move(pointer))
{
}

void JsonReader::fail(const std::string& problem) const
{
  throw InputError(file_, pointer_.empty() ? "/" : pointer_, problem);
}

void JsonReader::fail_member_or_here(const std::string& key, const std::string& if_given,
                                     const std::string& if_default) const
{
  if (const auto given = find(key))
    given->fail(if_given);
  fail(if_default);
}

bool JsonReader::has(const std::string& key) const
{
  return value_->is_object() && value_->contains(key);
}

JsonReader JsonReader::at(const std::string& key) const
{
  if (!value_->is_object())
    fail(fmt::format("expected an object with a \"{}\" member, got {}", key, describe_json(*value_)));
  auto it = value_->find(key);
  if (it == value_->end())
    fail(fmt::format("missing member \"{}\"", key));
  return JsonReader(*it, file_, pointer_ + "/" + json_pointer_escape(key));
}

std::optional<JsonReader> JsonReader::find(const std::string& key) const
{
  if (!has(key))
    return std::nullopt;
  return at(key);
}

std::vector<JsonReader> JsonReader::items() const
{
  if (!value_->is_array())
    fail(fmt::format("expected an array, got {}", describe_json(*value_)));
  std::vector<JsonReader> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i)
    out.emplace_back((*value_)[i], file_, fmt::format("{}/{}", pointer_, i));
  return out;
}

std::vector<std::pair<std::string, JsonReader>> JsonReader::members() const
{
  if (!value_->is_object())
    fail(fmt::format("expected an object, got {}", describe_json(*value_)));
  std::vector<std::pair<std::string, JsonReader>> out;
  for (auto it = value_->begin(); it != value_->end(); ++it)
    out.emplace_back(it.key(), JsonReader(it.value(), file_, pointer_ + "/" + json_pointer_escape(it.key())));
  return out;
}

std::string JsonReader::as_string() const
{
  if (!value_->is_string())
    fail(fmt::format("expected a string, got {}", describe_json(*value_)));
  return value_->get<std::string>();
}

double JsonReader::as_number() const
{
  if (!value_->is_number())
    fail(fmt::format("expected a number, got {}", describe_json(*value_)));
  const double v = value_->get<double>();
  if (!std::isfinite(v) || std::abs(v) > kMaxJsonMagnitude)
    fail(fmt::format("expected a finite number of magnitude at most {:g}, got {}", kMaxJsonMagnitude, value_->dump()));
  return v;
}

double JsonReader::as_positive_at_most(double max) const
{
  const double v = as_positive();
  if (v > max)
    fail(fmt::format("expected a positive number of at most {:g}, got {}", max, value_->dump()));
  return v;
}

double JsonReader::as_number_in(double lo, double hi) const
{
  const double v = as_number();
  if (!(v >= lo && v <= hi))
    fail(fmt::format("expected a number from {:g} to {:g}, got {}", lo, hi, value_->dump()));
  return v;
}

double JsonReader::as_positive() const
{
  const double v = as_number();
  if (!(v > 0))
    fail(fmt::format("expected a positive number, got {}", value_->dump()));
  return v;
}

double JsonReader::as_non_negative() const
{
  const double v = as_number();
  if (v < 0)
    fail(fmt::format("expected a number >= 0, got {}", value_->dump()));
  return v;
}

std::int64_t JsonReader::as_int() const
{
  if (value_->is_number_unsigned()) {
    const auto u = value_->get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return static_cast<std::int64_t>(u);
    fail(fmt::format("expected an integer of at most 9223372036854775807, got {}", u));
  }
  if (value_->is_number_integer())
    return value_->get<std::int64_t>();
  if (value_->is_number_float()) {
    const double v = value_->get<double>();
    if (std::isfinite(v) && std::floor(v) == v && std::abs(v) < 9e15)
      return static_cast<std::int64_t>(v);
    // A whole number beyond 2^53 written with a fraction or an exponent is not one integer but the nearest
    // double: refused as too large for that spelling, not as "not an integer".
    if (std::isfinite(v) && std::floor(v) == v)
      fail(fmt::format("expected an integer; written with an exponent or a fraction at most 9e15 (digits alone up to "
                       "9223372036854775807), got {}",
                       describe_json(*value_)));
  }
  fail(fmt::format("expected an integer, got {}", describe_json(*value_)));
}

std::int64_t JsonReader::as_positive_int() const
{
  const auto v = as_int();
  if (v <= 0)
    fail(fmt::format("expected a positive integer, got {}", v));
  return v;
}

std::int64_t JsonReader::as_int_in(std::int64_t lo, std::int64_t hi) const
{
  const auto v = as_int();
  if (v < lo || v > hi)
    fail(fmt::format("expected an integer from {} to {}, got {}", lo, hi, v));
  return v;
}

int JsonReader::as_count(int max) const
{
  const auto v = as_positive_int();
  if (v > max)
    fail(fmt::format("expected a positive integer of at most {}, got {}", max, v));
  return static_cast<int>(v);
}

int JsonReader::count_or(const std::string& key, int fallback, int max) const
{
  return has(key) ? at(key).as_count(max) : fallback;
}

bool JsonReader::as_bool() const
{
  if (!value_->is_boolean())
    fail(fmt::format("expected true or false, got {}", describe_json(*value_)));
  return value_->get<bool>();
}

std::string JsonReader::as_choice(const std::vector<std::string>& allowed) const
{
  const std::string v = as_string();
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
    fail(fmt::format("expected one of {}, got \"{}\"{}", fmt::join(allowed, ", "), v, did_you_mean(v, allowed)));
  return v;
}

void JsonReader::reject_unknown(const std::vector<std::string>& known) const
{
  for (const auto& [key, member] : members()) {
    if (std::find(known.begin(), known.end(), key) == known.end())
      member.fail(fmt::format("unknown member \"{}\"{} (expected one of {})", key, did_you_mean(key, known),
                              fmt::join(known, ", ")));
  }
}

std::string JsonReader::string_or(const std::string& key, const std::string& fallback) const
{
  return has(key) ? at(key).as_string() : fallback;
}

double JsonReader::number_or(const std::string& key, double fallback) const
{
  return has(key) ? at(key).as_number() : fallback;
}

double JsonReader::positive_or(const std::string& key, double fallback) const
{
  return has(key) ? at(key).as_positive() : fallback;
}

std::int64_t JsonReader::positive_int_or(const std::string& key, std::int64_t fallback) const
{
  return has(key) ? at(key).as_positive_int() : fallback;
}

bool JsonReader::bool_or(const std::string& key, bool fallback) const
{
  return has(key) ? at(key).as_bool() : fallback;
}

}  // namespace dtsim
