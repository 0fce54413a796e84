#include "sim/util/text_file.hpp"

#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

namespace dtsim {

std::string read_input_file(const std::string& path, const std::string& expected)
{
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(path, "", fmt::format("is a directory (expected {})", expected));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(path, "", fmt::format("cannot open the file (expected an existing, readable {})",
                                           expected.substr(expected.find(' ') + 1)));
  std::string content;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    content.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (content.size() > kMaxInputFileBytes)
      throw InputError(path, "", fmt::format("larger than {} MiB (expected {})", kMaxInputFileBytes >> 20, expected));
  }
  if (in.bad())
    throw InputError(path, "", fmt::format("cannot read the file (expected {})", expected));
  return content;
}

}  // namespace dtsim
