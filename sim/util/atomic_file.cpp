#include "sim/util/atomic_file.hpp"

#include "sim/util/input_error.hpp"
#include "sim/util/text_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace dtsim {

namespace fs = std::filesystem;

namespace {

/// Writes `content` to `path` (truncating it); throws InputError on failure (a full device, a closed pipe).
void write_to(const std::string& path, const std::string& shown, const std::string& content)
{
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw InputError(shown, "", "cannot write the file (expected a writable path)");
  out << content;
  out.flush();
  if (!out) {
    const int err = errno;
    throw InputError(shown, "", std::string("writing the file failed: ") + std::strerror(err));
  }
}

bool is_special(const fs::file_status& st)
{
  return fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st);
}

/// What this process's writes created (remove_created_outputs): new files, then folders.
struct CreatedOutputs {
  std::vector<std::string> files, folders;
};
CreatedOutputs& created_outputs()
{
  static CreatedOutputs created;
  return created;
}

/// Where the temporary of a regular output goes: beside the file a link names, keeping the link.
std::string target_of(const std::string& path)
{
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const auto resolved = fs::canonical(path, ec);
    if (!ec)
      return resolved.string();
  }
  return path;
}

}  // namespace

void check_output_path(const std::string& path, const std::string& flag)
{
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows links: what a link names is written
  if (path.empty())
    throw InputError(flag, "", "expected a file path to write, got an empty one");
  if (fs::is_directory(st))
    throw InputError(path, "", fmt::format("is a directory (expected a file path to write for {})", flag));
  if (is_input_file(path))
    throw InputError(path, "", fmt::format("is also an input of this command (expected a different file path to write for {})", flag));
  if (fs::exists(st))
    return;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw InputError(path, "", fmt::format("its folder {} does not exist (expected a file path to write for {})",
                                           parent.string(), flag));
}

void check_output_paths(const std::vector<std::pair<std::string, std::string>>& outputs,
                        const std::vector<std::string>& inputs)
{
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& [path, flag] = outputs[i];
    check_output_path(path, flag);
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (is_special(st))
      continue;  // /dev/null, /dev/stdout, a fifo: written in place, as often as given
    for (const auto& input : inputs) {
      std::error_code same_ec;
      if (fs::is_regular_file(st) && fs::equivalent(input, path, same_ec))
        throw InputError(path, "", fmt::format("is also an input of this command (expected a different file path to write for {})", flag));
    }
    for (std::size_t j = 0; j < i; ++j) {
      std::error_code same_ec, a_ec, b_ec;  // a file not written yet: the same path however spelt
      if (fs::absolute(outputs[j].first, a_ec).lexically_normal() == fs::absolute(path, b_ec).lexically_normal() ||
          fs::equivalent(outputs[j].first, path, same_ec))
        throw InputError(path, "", fmt::format("given for {} and for {} (expected a different file path for each output "
                                               "of this command)",
                                               outputs[j].second, flag));
    }
  }
}

void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files)
{
  struct Pending {
    std::string tmp, target, shown;
  };
  std::vector<Pending> pending;
  const auto remove_pending = [&] {
    for (const auto& p : pending)
      std::remove(p.tmp.c_str());
  };
  try {
    for (std::size_t i = 0; i < files.size(); ++i) {
      const auto& [path, content] = files[i];
      check_output_path(path, "the output");
      std::error_code status_ec;
      for (std::size_t j = 0; j < i && !is_special(fs::status(path, status_ec)); ++j) {
        std::error_code same_ec;
        if (files[j].first == path || fs::equivalent(files[j].first, path, same_ec))
          throw InputError(path, "", "given for two outputs of this command (expected a different file path for each)");
      }
      std::error_code ec;
      if (is_special(fs::status(path, ec))) {  // /dev/null, /dev/stdout, a fifo: written directly
        write_to(path, path, content);
        continue;
      }
      const std::string target = target_of(path);
      const std::string tmp = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(pending.size());
      pending.push_back({tmp, target, path});
      write_to(tmp, path, content);
    }
  } catch (...) {
    remove_pending();
    throw;
  }
  for (std::size_t i = 0; i < pending.size(); ++i) {
    std::error_code ec;
    const bool is_new = !fs::exists(pending[i].target, ec);
    fs::rename(pending[i].tmp, pending[i].target, ec);
    if (ec) {
      for (std::size_t j = i; j < pending.size(); ++j)
        std::remove(pending[j].tmp.c_str());
      throw InputError(pending[i].shown, "", "cannot write the file: " + ec.message());
    }
    if (is_new)
      created_outputs().files.push_back(pending[i].target);
  }
}

void remove_created_outputs()
{
  std::error_code ignored;
  auto& created = created_outputs();
  for (auto it = created.files.rbegin(); it != created.files.rend(); ++it)
    fs::remove(*it, ignored);
  for (auto it = created.folders.rbegin(); it != created.folders.rend(); ++it)
    fs::remove(*it, ignored);  // only an empty folder goes
  created = {};
}

void note_created_folder(const std::string& path)
{
  created_outputs().folders.push_back(path);
}

void write_file_atomically(const std::string& path, const std::string& content)
{
  write_files_atomically({{path, content}});
}

}  // namespace dtsim
