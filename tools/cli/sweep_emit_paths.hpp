// `sweep --emit`'s paths: each point names the scenario's relative files by absolute path (the jobs run
// the points from another folder), and the folder is checked before anything is written (not a folder,
// a sweep already there, a jobs.txt or slurm.sh no emit wrote: refused).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace dtsim::cli {

/// A point's document (`doc`, of `scenario`) with the files it names relative to the scenario made
/// absolute (which files, and how each is resolved: at the definition).
nlohmann::json with_absolute_files(nlohmann::json doc, const std::string& scenario);

/// Throws InputError where --emit may not write into `dir`: not a directory, a sweep already there
/// (manifest.json, points/ or results/, naming `dir`), or a jobs.txt / slurm.sh that no emit wrote
/// (naming the file). Nothing is written.
void check_emit_folder(const std::string& dir);

}  // namespace dtsim::cli
