#include "sim/util/input_error.hpp"

#include <fmt/format.h>

namespace dtsim {

namespace {
std::string compose(const std::string& file, const std::string& pointer, const std::string& problem)
{
  if (pointer.empty())
    return fmt::format("{}: {}", file, problem);
  return fmt::format("{}: at {}: {}", file, pointer, problem);
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
