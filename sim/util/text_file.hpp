// Reading an input file whole, with the checks every reader needs: it exists, it is not a
// directory, it is not larger than any input dtsim reads.
#pragma once

#include <cstddef>
#include <string>

namespace dtsim {

/// Largest input file read: dtsim's inputs (scenarios, logs, profiles) are kilobytes to a few MiB.
constexpr std::size_t kMaxInputFileBytes = 64u << 20;

/// The content of `path`; throws InputError naming the file and what was `expected` ("a JSON file",
/// "an nccl-tests output log") when it cannot be opened, is a directory or is too large.
std::string read_input_file(const std::string& path, const std::string& expected);

/// Whether `path` is a regular file this process has read as an input (by device and inode, so a
/// link or another spelling of the path counts): an output written over it would destroy the input.
bool is_input_file(const std::string& path);

}  // namespace dtsim
