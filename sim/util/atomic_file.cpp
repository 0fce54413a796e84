#include "sim/util/atomic_file.hpp"

#include "sim/util/input_error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace dtsim {

namespace {

/// Writes `content` to `path` in place; throws InputError on failure (a full device, a closed pipe).
void write_in_place(const std::string& path, const std::string& content)
{
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw InputError(path, "", "cannot write the file (expected a writable path)");
  out << content;
  out.flush();
  if (!out)
    throw InputError(path, "", std::string("writing the file failed: ") + std::strerror(errno));
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content)
{
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows links: what a link names is written
  if (fs::is_directory(st))
    throw InputError(path, "", "is a directory (expected a file path to write)");
  // A device, pipe or socket (/dev/null, /dev/stdout, a fifo) is written directly, never replaced.
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    write_in_place(path, content);
    return;
  }
  // A link to a regular file: replace the file it names, keep the link.
  std::string target = path;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const auto resolved = fs::canonical(path, ec);
    if (!ec)
      target = resolved.string();
  }
  const std::string tmp = target + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw InputError(path, "", "cannot write the file (expected a writable path)");
    out << content;
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw InputError(path, "", "writing the file failed");
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw InputError(path, "", "cannot write the file: " + ec.message());
  }
}

}  // namespace dtsim
