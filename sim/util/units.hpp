// Sizes and rates as people write them: "8", "64K", "25M", "8G" (powers of 1024, as nccl-tests).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dtsim {

/// Parses a byte size with an optional K/M/G/T suffix (binary multiples). nullopt when malformed.
std::optional<std::uint64_t> parse_size(const std::string& text);

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;
constexpr double kSecondsPerDay = 86400.0;

}  // namespace dtsim
