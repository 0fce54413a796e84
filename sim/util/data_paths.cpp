#include "sim/util/data_paths.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace dtsim {

std::string data_dir()
{
  if (const char* env = std::getenv("DTSIM_DATA_DIR"); env && *env)
    return env;
  return DTSIM_DEFAULT_DATA_DIR;
}

std::string data_file(const std::string& folder, const std::string& name)
{
  return data_dir() + "/" + folder + "/" + name + ".json";
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
