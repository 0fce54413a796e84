// Writes output files all at once: each into a temporary beside it, renamed into place on success,
// so a failure never leaves a half-written file behind. Special files (/dev/null, a pipe) are
// written in place, never replaced.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace dtsim {

/// Throws InputError (exit 2) when the file cannot be written.
void write_file_atomically(const std::string& path, const std::string& content);

/// Several outputs of one command, all or none: every content is written (temporaries, special
/// files in place) before any temporary is renamed into place; on a failure the temporaries are
/// removed and InputError names the path that failed.
void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files);

/// Takes back what this process's writes created, when the command fails after writing (its standard
/// output could not be written): the files that did not exist before it renamed them into place,
/// then the folders noted by note_created_folder (each only if empty). A file it replaced stays, whole.
void remove_created_outputs();
/// Notes a folder this process made for its outputs (sweep --emit), for remove_created_outputs.
void note_created_folder(const std::string& path);

/// Checks, before any work, that `path` can be an output file: not a directory, its folder exists.
/// Throws InputError naming the path and `flag` (the option that gave it).
void check_output_path(const std::string& path, const std::string& flag);

/// check_output_path for each output of one command, (path, flag) pairs, before any work and before
/// its inputs are read (which is_input_file then knows): also that none is one of `inputs` (the files
/// the command line names to read) and that no two outputs are the same file (special files, such
/// as /dev/null, aside: they are written in place). Throws InputError naming the path and its flag.
void check_output_paths(const std::vector<std::pair<std::string, std::string>>& outputs,
                        const std::vector<std::string>& inputs);

}  // namespace dtsim
