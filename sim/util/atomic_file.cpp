#include "sim/util/atomic_file.hpp"

#include "sim/util/input_error.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace dtsim {

void write_file_atomically(const std::string& path, const std::string& content)
{
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw InputError(path, "", "cannot write the file (expected a writable path)");
    out << content;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw InputError(path, "", "writing the file failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw InputError(path, "", "cannot write the file: " + ec.message());
  }
}

}  // namespace dtsim
