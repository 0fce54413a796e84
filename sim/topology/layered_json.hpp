// A topology description made of layers: the user's object (or file) first, then the preset it
// names in "base", then that preset's base, ... Layers combine as JSON merge patches (RFC 7396):
// objects are merged by member, arrays and scalars are replaced whole, and a null removes the
// member (a required one is then missing, an optional one takes its default). Each value is read from the first layer that has it, so an error
// names the file and JSON pointer the offending value really came from.
#pragma once

#include "sim/util/json_reader.hpp"

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dtsim {

class LayeredJson {
public:
  /// Adds a layer below the existing ones (the first added is the most specific). `owned` keeps
  /// the document alive when the layer was loaded here.
  void add_layer(const JsonReader& root, std::shared_ptr<const nlohmann::json> owned = nullptr);

  /// The value at `path` in the first layer that has it.
  std::optional<JsonReader> find(std::initializer_list<std::string> path) const;
  /// As find(), but a missing value is an error at the most specific layer.
  JsonReader at(std::initializer_list<std::string> path) const;
  /// The index of the layer find() takes the value at `path` from (0: the most specific), or size()
  /// when none has it: of two values that contradict each other, the more specific one is blamed.
  std::size_t layer_of(std::initializer_list<std::string> path) const;
  /// Every layer's object at `path` (to check member names in each).
  std::vector<JsonReader> objects_at(std::initializer_list<std::string> path) const;

  const JsonReader& top() const { return layers_.front(); }
  std::size_t size() const { return layers_.size(); }

private:
  std::vector<JsonReader> layers_;
  std::vector<std::shared_ptr<const nlohmann::json>> owned_;
};

}  // namespace dtsim
