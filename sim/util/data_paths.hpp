// Where dtsim finds its data folders (models/, topologies/): $DTSIM_DATA_DIR, else the source tree.
#pragma once

#include <string>
#include <vector>

namespace dtsim {

std::string data_dir();
/// data_dir()/folder/name.json
std::string data_file(const std::string& folder, const std::string& name);
/// Names (without .json) of the files in data_dir()/folder, sorted.
std::vector<std::string> data_names(const std::string& folder);

}  // namespace dtsim
