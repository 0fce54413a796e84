#include "sim/topology/layered_json.hpp"

#include "sim/util/input_error.hpp"

#include <fmt/format.h>

namespace dtsim {

namespace {
enum class Found { Value, Absent, Deleted };

/// Walks `path` down from `root`: the value, Absent when a member is missing (lower layers may
/// have it), or Deleted when a member on the way is null (JSON merge patch, RFC 7396: null removes
/// the member from the layers below). A non-object on the way is an error.
Found walk(const JsonReader& root, std::initializer_list<std::string> path, std::optional<JsonReader>& out)
{
  std::optional<JsonReader> at = root;
  for (const auto& key : path) {
    if (!at->is_object())
      at->fail(fmt::format("expected an object with a \"{}\" member, got {}", key, describe_json(at->json())));
    at = at->find(key);
    if (!at)
      return Found::Absent;
    if (at->json().is_null())
      return Found::Deleted;
  }
  out = at;
  return Found::Value;
}
}  // namespace

void LayeredJson::add_layer(const JsonReader& root, std::shared_ptr<const nlohmann::json> owned)
{
  layers_.push_back(root);
  if (owned)
    owned_.push_back(std::move(owned));
}

std::optional<JsonReader> LayeredJson::find(std::initializer_list<std::string> path) const
{
  for (const auto& layer : layers_) {
    std::optional<JsonReader> value;
    const Found found = walk(layer, path, value);
    if (found == Found::Value)
      return value;
    if (found == Found::Deleted)
      return std::nullopt;
  }
  return std::nullopt;
}

std::size_t LayeredJson::layer_of(std::initializer_list<std::string> path) const
{
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    std::optional<JsonReader> value;
    const Found found = walk(layers_[i], path, value);
    if (found == Found::Value)
      return i;
    if (found == Found::Deleted)
      break;
  }
  return layers_.size();
}

JsonReader LayeredJson::at(std::initializer_list<std::string> path) const
{
  if (auto value = find(path))
    return *value;
  std::string pointer;
  for (const auto& key : path)
    pointer.append(1, '/').append(json_pointer_escape(key));
  const JsonReader& first = layers_.front();
  throw InputError(first.file(), first.pointer().empty() ? "/" : first.pointer(),
                   fmt::format("missing member \"{}\" (and no \"base\" preset provides it)", pointer.substr(1)));
}

std::vector<JsonReader> LayeredJson::objects_at(std::initializer_list<std::string> path) const
{
  std::vector<JsonReader> out;
  for (const auto& layer : layers_) {
    std::optional<JsonReader> value;
    const Found found = walk(layer, path, value);
    if (found == Found::Deleted)
      break;
    if (found == Found::Absent)
      continue;
    if (!value->is_object())
      value->fail(fmt::format("expected an object, got {}", describe_json(value->json())));
    out.push_back(*value);
  }
  return out;
}

}  // namespace dtsim
