#include "sim/scenario/scenario.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <system_error>

namespace dtsim {

std::vector<std::string> split_override_path(const std::string& path)
{
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  return parts;
}

namespace {

// Ways of giving the compute times: setting a key of one group removes the keys of the others.
const std::array<std::vector<std::string>, 4> kComputeGroups = {{
    {"step_time_s"}, {"single_gpu_throughput"}, {"gpu", "efficiency", "model", "memory_efficiency"}, {"profile"}}};

// Ways of giving the batch: the older batch_per_gpu, or Megatron's micro_batch (+ global_batch).
const std::array<std::vector<std::string>, 2> kBatchGroups = {{{"batch_per_gpu"}, {"micro_batch", "global_batch"}}};

template <std::size_t N>
void drop_conflicting_keys(const std::array<std::vector<std::string>, N>& groups, nlohmann::json& object,
                           const std::string& key)
{
  const auto mine = std::find_if(groups.begin(), groups.end(), [&](const auto& group) {
    return std::find(group.begin(), group.end(), key) != group.end();
  });
  if (mine == groups.end())
    return;
  for (auto group = groups.begin(); group != groups.end(); ++group) {
    if (group == mine)
      continue;
    for (const auto& k : *group)
      object.erase(k);
  }
}

/// Whether `later` names a key of a group in `groups` (under the parent `parent`) that removes the
/// member `earlier` sets or sets within: another group's key of the same object.
template <std::size_t N>
bool drops_conflicting_key(const std::array<std::vector<std::string>, N>& groups, const std::vector<std::string>& parent,
                           const std::vector<std::string>& later, const std::vector<std::string>& earlier)
{
  const std::size_t depth = parent.size();
  if (later.size() != depth + 1 || earlier.size() <= depth || !std::equal(parent.begin(), parent.end(), later.begin()) ||
      !std::equal(parent.begin(), parent.end(), earlier.begin()))
    return false;
  const auto group_of = [&](const std::string& key) {
    return std::find_if(groups.begin(), groups.end(), [&](const auto& group) {
      return std::find(group.begin(), group.end(), key) != group.end();
    });
  };
  const auto mine = group_of(later[depth]);
  const auto theirs = group_of(earlier[depth]);
  return mine != groups.end() && theirs != groups.end() && mine != theirs;
}

}  // namespace

bool override_replaces(const std::string& later, const std::string& earlier)
{
  const auto a = split_override_path(later);
  const auto b = split_override_path(earlier);
  if (a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin()))
    return true;  // the same member, or one that holds it
  return drops_conflicting_key(kComputeGroups, {"training", "compute"}, a, b) ||
         drops_conflicting_key(kBatchGroups, {"training"}, a, b);
}

Override parse_override(const std::string& text)
{
  try {
    (void)nlohmann::json(text).dump();  // nlohmann refuses to write what is not UTF-8
  } catch (const nlohmann::json::exception&) {
    throw InputError("--set", "", "expected key.path=value in UTF-8, got invalid UTF-8 bytes");
  }
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set", "", fmt::format("expected key.path=value, got \"{}\"", text));
  Override o{text.substr(0, eq), text.substr(eq + 1)};
  for (const auto& part : split_override_path(o.path)) {
    if (part.empty())
      throw InputError("--set", "", fmt::format("empty component in key path \"{}\"", o.path));
  }
  return o;
}

namespace {

/// The array element a --set path component names: a decimal index below the array's size
/// (RFC 6901: no leading zeros), or, where `append` allows it, "-" for a new last element.
std::size_t array_slot(const nlohmann::json& array, const std::string& part, const nlohmann::json::json_pointer& at,
                       const Override& o, bool append)
{
  const std::size_t size = array.size();
  const std::string expected =
      size == 0 ? std::string(append ? "the array is empty: \"-\" appends" : "the array is empty")
                : fmt::format("expected an index 0 to {}{}", size - 1, append ? " or \"-\" (appends)" : "");
  if (part == "-") {
    if (append)
      return size;
    throw InputError("--set", at.to_string(),
                     fmt::format("cannot set {}: \"-\" (a new element) may only end the path; {}", o.path, expected));
  }
  std::size_t index = 0;
  const char* end = part.data() + part.size();
  const auto [stop, ec] = std::from_chars(part.data(), end, index);
  if (ec != std::errc() || stop != end || (part.size() > 1 && part[0] == '0') || index >= size)
    throw InputError("--set", at.to_string(),
                     fmt::format("cannot set {}: \"{}\" is not an element of the array of {} ({})", o.path, part, size,
                                 expected));
  return index;
}

}  // namespace

void apply_overrides(nlohmann::json& doc, const std::vector<Override>& overrides)
{
  for (const auto& o : overrides) {
    nlohmann::json value;
    try {
      value = parse_json_text(o.value, "--set " + o.path);
    } catch (const InputError& e) {
      if (e.problem().rfind("malformed JSON", 0) != 0)
        throw;      // a number beyond a double, nesting too deep: not a word either
      value = o.value;  // a bare word: a string
    }
    // Walk down with nlohmann's JSON pointers (each dotted component one reference token, escaped
    // by json_pointer), creating missing objects on the way; an array takes an element's index.
    const auto parts = split_override_path(o.path);
    nlohmann::json::json_pointer at;
    nlohmann::json* node = &doc;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      if (node->is_array()) {
        node = &(*node)[array_slot(*node, parts[i], at, o, false)];
      } else if (node->is_object()) {
        nlohmann::json& child = (*node)[parts[i]];
        if (child.is_null())
          child = nlohmann::json::object();
        node = &child;
      } else {
        throw InputError("--set", at.to_string(),
                         fmt::format("cannot set {}: the value at {} is {}, not an object or array", o.path,
                                     at.empty() ? "/" : at.to_string(), describe_json(*node)));
      }
      at /= parts[i];
    }
    const std::string& key = parts.back();
    if (node->is_array()) {
      if (key == "-" && value.is_null())
        throw InputError("--set", at.to_string(),
                         fmt::format("cannot set {}=null: \"-\" names a new element, there is none to remove", o.path));
      const std::size_t slot = array_slot(*node, key, at, o, !value.is_null());
      if (value.is_null())
        node->erase(slot);
      else if (slot == node->size())
        node->push_back(value);
      else
        (*node)[slot] = value;
      continue;
    }
    if (!node->is_object())
      throw InputError("--set", at.to_string(),
                       fmt::format("cannot set {}: its parent is {}, not an object or array", o.path, describe_json(*node)));
    if (value.is_null()) {
      node->erase(key);
      continue;
    }
    if (parts.size() == 3 && parts[0] == "training" && parts[1] == "compute")
      drop_conflicting_keys(kComputeGroups, *node, key);
    if (parts.size() == 2 && parts[0] == "training")
      drop_conflicting_keys(kBatchGroups, *node, key);
    (*node)[key] = value;
  }
}

}  // namespace dtsim
