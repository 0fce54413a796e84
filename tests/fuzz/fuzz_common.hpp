// Shared by the fuzz targets: the bytes as text, and the contract every parser keeps — it returns
// or throws InputError (exit 2 in the CLI). Any other exception escapes and libFuzzer reports it,
// as it reports crashes, sanitizer errors and hangs.
#pragma once

#include "sim/util/input_error.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace dtsim::fuzz {

inline std::string text_of(const std::uint8_t* data, std::size_t size)
{
  return std::string(reinterpret_cast<const char*>(data), size);
}

template <class Parse>
int expect_input_errors_only(Parse&& parse)
{
  try {
    parse();
  } catch (const InputError&) {
  }
  return 0;
}

}  // namespace dtsim::fuzz
