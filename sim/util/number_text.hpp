// Numbers read from text (logs, command-line values, CSV cells): the one checked way to turn a
// token into a number. The whole token must be the number, a double must be finite, an integer must
// fit the type it becomes; anything else is "not a number" (std::nullopt), never an exception, a
// wrapped value or a silently truncated one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace dtsim {

/// A finite decimal number ("12", "-3.5", "1e-3"); no leading '+', spaces or trailing text.
std::optional<double> parse_double(std::string_view text);

/// An integer in [lo, hi] (decimal, optional leading '-').
std::optional<std::int64_t> parse_int(std::string_view text, std::int64_t lo, std::int64_t hi);

/// An unsigned integer that fits 64 bits.
std::optional<std::uint64_t> parse_uint64(std::string_view text);

}  // namespace dtsim
