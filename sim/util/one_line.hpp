// Messages on one line whatever the input held.
#pragma once

#include <string>

namespace dtsim {

/// `text` with its control characters (a newline or an escape sequence quoted from an input)
/// written as \n, \t, \xHH. InputError's message and the CLI's error lines go through it.
std::string one_line(const std::string& text);

}  // namespace dtsim
