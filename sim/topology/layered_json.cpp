#include "sim/topology/layered_json.hpp"

#include "sim/util/input_error.hpp"

#include <fmt/format.h>

namespace dtsim {

namespace {
/// Walks `path` down from `root`; nullopt when a member is absent (a non-object on the way is an error).
std::optional<JsonReader> walk(const JsonReader& root, std::initializer_list<std::string> path)
{
  std::optional<JsonReader> at = root;
  for (const auto& key : path) {
    if (!at->is_object())
      at->fail(fmt::format("expected an object with a \"{}\" member, got {}", key, describe_json(at->json())));
    at = at->find(key);
    if (!at)
      return std::nullopt;
  }
  return at;
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
    if (auto value = walk(layer, path))
      return value;
  }
  return std::nullopt;
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
    if (auto value = walk(layer, path)) {
      if (!value->is_object())
        value->fail(fmt::format("expected an object, got {}", describe_json(value->json())));
      out.push_back(*value);
    }
  }
  return out;
}

}  // namespace dtsim
