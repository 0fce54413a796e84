#include "sim/scenario/scenario.hpp"
#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace dtsim {

namespace {

std::vector<std::string> split_path(const std::string& path)
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
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set", "", fmt::format("expected key.path=value, got \"{}\"", text));
  Override o{text.substr(0, eq), text.substr(eq + 1)};
  for (const auto& part : split_path(o.path)) {
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
      value = nlohmann::json::parse(o.value);
    } catch (const nlohmann::json::parse_error&) {
      value = o.value;  // a bare word: a string
    }
    const auto parts = split_path(o.path);
    nlohmann::json* node = &doc;
    std::string pointer;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      pointer += "/" + json_pointer_escape(parts[i]);
      if (!node->is_object())
        throw InputError("--set", pointer, fmt::format("cannot set {}: the value at {} is not an object", o.path, pointer));
      node = &(*node)[parts[i]];
      if (node->is_null())
        *node = nlohmann::json::object();
    }
    if (!node->is_object())
      throw InputError("--set", pointer, fmt::format("cannot set {}: its parent is not an object", o.path));
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
