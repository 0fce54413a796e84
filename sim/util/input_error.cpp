#include "sim/util/input_error.hpp"
#include "sim/util/one_line.hpp"

#include <fmt/format.h>

namespace dtsim {

std::string one_line(const std::string& text)
{
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  return out;
}

bool has_control_character(const std::string& text, bool tab_too)
{
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && (c != '\t' || tab_too)) || u == 0x7f)
      return true;
  }
  return false;
}

namespace {

std::string compose(const std::string& file, const std::string& pointer, const std::string& problem)
{
  if (pointer.empty())
    return one_line(fmt::format("{}: {}", file, problem));
  return one_line(fmt::format("{}: at {}: {}", file, pointer, problem));
}
}  // namespace

InputError::InputError(std::string file, std::string pointer, std::string problem)
    : std::runtime_error(compose(file, pointer, problem)),
      file_(std::move(file)),
      pointer_(std::move(pointer)),
      problem_(std::move(problem))
{
}

}  // namespace dtsim
