// Small text helpers shared by the parsers.
#pragma once

#include <string>

namespace dtsim {

/// `s` in lower case (ASCII).
std::string lower(std::string s);

}  // namespace dtsim
