#include "sim/util/data_paths.hpp"

#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace dtsim {

std::string data_dir()
{
  if (const char* env = std::getenv("DTSIM_DATA_DIR"); env && *env)
    return env;
  // The source tree it was built from, else an installed tree: <prefix>/bin/dtsim with its data
  // in <prefix>/share/dtsim (cmake --install).
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(fs::path(DTSIM_DEFAULT_DATA_DIR) / "topologies", ec))
    return DTSIM_DEFAULT_DATA_DIR;
  const fs::path installed = fs::read_symlink("/proc/self/exe", ec).parent_path().parent_path() / "share" / "dtsim";
  if (!ec && fs::is_directory(installed / "topologies", ec))
    return installed.string();
  return DTSIM_DEFAULT_DATA_DIR;
}

std::string data_file(const std::string& folder, const std::string& name)
{
  return data_dir() + "/" + folder + "/" + name + ".json";
}

void require_referenced_file(const std::string& path, const std::string& ref, const std::string& file,
                             const std::string& pointer, bool beside_only)
{
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))  // the reader would name the folder alone, not who named it
    throw InputError(file, pointer.empty() ? "/" : pointer, fmt::format("\"{}\" is a directory (expected a file)", ref));
  if (fs::exists(path, ec))
    return;
  if (fs::path(ref).is_absolute())
    throw InputError(file, pointer.empty() ? "/" : pointer, fmt::format("expected an existing file, \"{}\" was not found", ref));
  const std::string folder = fs::path(file).parent_path().string();
  throw InputError(file, pointer.empty() ? "/" : pointer,
                   fmt::format("expected an existing file, \"{}\" was not found beside {} ({}){}", ref,
                               fs::path(file).filename().string(), folder.empty() ? "." : folder,
                               beside_only ? "" : " or in the working directory"));
}

std::vector<std::string> data_names(const std::string& folder)
{
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir() + "/" + folder, ec)) {
    if (entry.path().extension() == ".json")
      names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace dtsim
