// Writes an output file all at once: into a temporary beside it, renamed into place on success, so
// a failure never leaves a half-written file behind.
#pragma once

#include <string>

namespace dtsim {

/// Throws InputError (exit 2) when the file cannot be written.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace dtsim
