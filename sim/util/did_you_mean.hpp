// "did you mean ...?" for a mistyped name: the closest of the known names by edit distance.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dtsim::cli {

/// The known name closest to `typed` (Levenshtein distance at most a third of its length, >= 2),
/// or nothing when none is close.
std::optional<std::string> closest_name(const std::string& typed, const std::vector<std::string>& known);

}  // namespace dtsim::cli
