// Messages on one line whatever the input held.
#pragma once

#include <string>

namespace dtsim {

/// `text` with its control characters (a newline or an escape sequence quoted from an input)
/// written as \n, \t, \xHH. InputError's message and the CLI's error lines go through it.
std::string one_line(const std::string& text);

/// Whether `text` holds a control character (below 0x20, or DEL), a tab aside unless `tab_too`:
/// text that is printed back (a runs CSV's cells, a scenario's name, a folder written into a
/// script) must not carry a newline or a terminal escape sequence.
bool has_control_character(const std::string& text, bool tab_too = false);

}  // namespace dtsim
