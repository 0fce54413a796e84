#include "sim/util/units.hpp"

#include <cctype>
#include <charconv>
#include <cstdint>

namespace dtsim {

std::optional<std::uint64_t> parse_size(const std::string& text)
{
  if (text.empty())
    return std::nullopt;
  std::uint64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin)
    return std::nullopt;
  std::uint64_t mult = 1;
  if (ptr != end) {
    switch (std::toupper(static_cast<unsigned char>(*ptr))) {
      case 'K': mult = 1ULL << 10; break;
      case 'M': mult = 1ULL << 20; break;
      case 'G': mult = 1ULL << 30; break;
      case 'T': mult = 1ULL << 40; break;
      default: return std::nullopt;
    }
    ++ptr;
    if (ptr != end && (*ptr == 'B' || *ptr == 'b'))
      ++ptr;
    if (ptr != end)
      return std::nullopt;
  }
  if (value > UINT64_MAX / mult)
    return std::nullopt;  // beyond 16 EiB: not a size
  return value * mult;
}

}  // namespace dtsim
