// Small text helpers shared by the parsers.
#pragma once

#include <string>
#include <vector>

namespace dtsim {

/// `s` in lower case (ASCII).
std::string lower(std::string s);

/// The whitespace-separated tokens of `line`.
std::vector<std::string> split_ws(const std::string& line);

/// The pieces of `s` between `sep`s, each without surrounding spaces and tabs ("a, b," gives
/// "a", "b", ""); one empty piece for an empty `s`.
std::vector<std::string> split_trimmed(const std::string& s, char sep);

}  // namespace dtsim
