#include "sim/util/text_file.hpp"

#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <utility>

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dtsim {

namespace {
/// Device and inode of every regular file read as an input (sweep and report read from threads).
std::mutex inputs_mutex;
std::set<std::pair<dev_t, ino_t>>& inputs_read()
{
  static std::set<std::pair<dev_t, ino_t>> inputs;
  return inputs;
}

void remember_input(const std::string& path)
{
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    const std::lock_guard<std::mutex> lock(inputs_mutex);
    inputs_read().emplace(st.st_dev, st.st_ino);
  }
}
/// A named pipe, read through a descriptor opened without waiting for a writer (open() of a pipe
/// blocks until one comes: a pipe nobody wrote to hung dtsim). Reading then blocks only while a
/// writer is there, so a shell's <(...) is read to its end and a pipe without one ends at once.
std::string read_pipe(const std::string& path, const std::string& expected)
{
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    throw InputError(path, "", fmt::format("cannot open the pipe (expected {})", expected));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string content;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || content.size() + static_cast<std::size_t>(n) > kMaxInputFileBytes) {
      ::close(fd);
      if (n < 0)
        throw InputError(path, "", fmt::format("cannot read the pipe (expected {})", expected));
      if (n > 0)
        throw InputError(path, "", fmt::format("larger than {} MiB (expected {})", kMaxInputFileBytes >> 20, expected));
      break;
    }
    content.append(buffer, static_cast<std::size_t>(n));
  }
  if (content.empty())
    throw InputError(path, "", fmt::format("a pipe that gave no data (expected {})", expected));
  return content;
}
}  // namespace

bool is_input_file(const std::string& path)
{
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return false;
  const std::lock_guard<std::mutex> lock(inputs_mutex);
  return inputs_read().count({st.st_dev, st.st_ino}) > 0;
}

std::string read_input_file(const std::string& path, const std::string& expected)
{
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(path, "", fmt::format("is a directory (expected {})", expected));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode))
    return read_pipe(path, expected);
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
  remember_input(path);
  return content;
}

}  // namespace dtsim
