#include "sim/scenario/scenario.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

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
    {"step_time_s"}, {"single_gpu_throughput"}, {"gpu", "efficiency"}, {"profile"}}};

void drop_conflicting_compute_keys(nlohmann::json& compute, const std::string& key)
{
  const auto mine = std::find_if(kComputeGroups.begin(), kComputeGroups.end(), [&](const auto& group) {
    return std::find(group.begin(), group.end(), key) != group.end();
  });
  if (mine == kComputeGroups.end())
    return;
  for (auto group = kComputeGroups.begin(); group != kComputeGroups.end(); ++group) {
    if (group == mine)
      continue;
    for (const auto& k : *group)
      compute.erase(k);
  }
}

}  // namespace

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
    // Walk to the parent with nlohmann's JSON pointers, creating missing objects on the way.
    const auto parts = split_override_path(o.path);
    nlohmann::json::json_pointer parent;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      if (!doc[parent].is_object())
        throw InputError("--set", parent.to_string(), fmt::format("cannot set {}: the value at {} is not an object",
                                                                  o.path, parent.to_string()));
      parent /= parts[i];
      if (doc[parent].is_null())
        doc[parent] = nlohmann::json::object();
    }
    nlohmann::json* node = &doc[parent];
    if (!node->is_object())
      throw InputError("--set", parent.to_string(), fmt::format("cannot set {}: its parent is not an object", o.path));
    const std::string& key = parts.back();
    if (value.is_null()) {
      node->erase(key);
      continue;
    }
    if (parts.size() == 3 && parts[0] == "training" && parts[1] == "compute")
      drop_conflicting_compute_keys(*node, key);
    (*node)[key] = value;
  }
}

}  // namespace dtsim
