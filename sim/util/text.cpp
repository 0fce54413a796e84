#include "sim/util/text.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace dtsim {

std::string lower(std::string s)
{
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> split_ws(const std::string& line)
{
  std::istringstream in(line);
  std::vector<std::string> tokens;
  for (std::string t; in >> t;)
    tokens.push_back(t);
  return tokens;
}

std::vector<std::string> split_trimmed(const std::string& s, char sep)
{
  std::vector<std::string> out;
  for (std::size_t from = 0;;) {
    const auto at = s.find(sep, from);
    const std::string piece = s.substr(from, at == std::string::npos ? std::string::npos : at - from);
    const auto a = piece.find_first_not_of(" \t"), b = piece.find_last_not_of(" \t");
    out.push_back(a == std::string::npos ? "" : piece.substr(a, b - a + 1));
    if (at == std::string::npos)
      return out;
    from = at + 1;
  }
}

}  // namespace dtsim
