#include "sim/util/text.hpp"

#include <algorithm>
#include <cctype>

namespace dtsim {

std::string lower(std::string s)
{
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace dtsim
