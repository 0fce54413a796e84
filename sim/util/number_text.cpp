#include "sim/util/number_text.hpp"

#include <charconv>
#include <cmath>

namespace dtsim {

std::optional<double> parse_double(std::string_view text)
{
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v))
    return std::nullopt;
  return v;
}

std::optional<std::int64_t> parse_int(std::string_view text, std::int64_t lo, std::int64_t hi)
{
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < lo || v > hi)
    return std::nullopt;
  return v;
}

std::optional<std::uint64_t> parse_uint64(std::string_view text)
{
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end)
    return std::nullopt;
  return v;
}

}  // namespace dtsim
