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

/// A file that `file` names at JSON pointer `pointer` as `ref`, looked for at `path` (beside `file`,
/// and in the working directory unless `beside_only`): an InputError at that pointer when no such
/// file exists, where the open of `path` alone would name neither the file naming it nor where it
/// was looked for.
void require_referenced_file(const std::string& path, const std::string& ref, const std::string& file,
                             const std::string& pointer, bool beside_only = false);

}  // namespace dtsim
