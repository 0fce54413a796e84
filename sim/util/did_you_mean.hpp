// "did you mean ...?" for a mistyped name (a subcommand, a scenario key, a preset, a model, a
// dataset, a --set path): the closest of the known names.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dtsim {

/// The known name closest to `typed`: by Levenshtein distance (case, '-' and '_' alike) at most a
/// third of its length (at least 2), else the one sharing the longest leading part with it (at
/// least 4 characters and half of `typed`: "batchsize" -> "batch_per_gpu"); nothing when none is
/// close or two are equally close.
std::optional<std::string> closest_name(const std::string& typed, const std::vector<std::string>& known);

/// ", did you mean \"NAME\"?" for the closest name, or "" when none is close.
std::string did_you_mean(const std::string& typed, const std::vector<std::string>& known);

}  // namespace dtsim
