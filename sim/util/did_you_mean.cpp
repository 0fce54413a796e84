#include "sim/util/did_you_mean.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstddef>

namespace dtsim {

namespace {

std::string folded(const std::string& s)
{
  std::string out;
  out.reserve(s.size());
  for (char c : s)
    out += c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::size_t edit_distance(const std::string& a, const std::string& b)
{
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::size_t common_prefix(const std::string& a, const std::string& b)
{
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n])
    ++n;
  return n;
}

/// The name with the smallest score below `limit`; nothing on a tie.
template <class Score>
std::optional<std::string> best_of(const std::vector<std::string>& known, std::size_t limit, Score score)
{
  std::optional<std::string> best;
  std::size_t best_score = limit;
  bool tie = false;
  for (const auto& name : known) {
    const std::size_t s = score(name);
    if (s < best_score) {
      best_score = s;
      best = name;
      tie = false;
    } else if (s == best_score && best && *best != name) {
      tie = true;
    }
  }
  return tie ? std::nullopt : best;
}

}  // namespace

std::optional<std::string> closest_name(const std::string& typed, const std::vector<std::string>& known)
{
  constexpr std::size_t kMaxLength = 256;  // a name longer than this is not a typo of one
  if (typed.empty() || typed.size() > kMaxLength)
    return std::nullopt;
  const std::string t = folded(typed);
  if (auto near = best_of(known, std::max<std::size_t>(2, t.size() / 3) + 1,
                          [&](const std::string& n) { return edit_distance(t, folded(n.substr(0, kMaxLength))); }))
    return near;
  const std::size_t min_prefix = std::max<std::size_t>(4, (t.size() + 1) / 2);
  const auto longest = best_of(known, kMaxLength + 1, [&](const std::string& n) {
    return kMaxLength - common_prefix(t, folded(n));
  });
  if (longest && common_prefix(t, folded(*longest)) >= min_prefix)
    return longest;
  return std::nullopt;
}

std::string did_you_mean(const std::string& typed, const std::vector<std::string>& known)
{
  const auto near = closest_name(typed, known);
  return near ? fmt::format(", did you mean \"{}\"?", *near) : std::string();
}

}  // namespace dtsim
