// Bad input: names the file, the JSON pointer and what was expected. The CLI maps it to exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace dtsim {

class InputError : public std::runtime_error {
public:
  /// @param file    the file the value came from (or a label such as "--set" or "command line")
  /// @param pointer JSON pointer of the offending value ("" when the whole file is at fault)
  /// @param problem what was expected, and what was found
  InputError(std::string file, std::string pointer, std::string problem);

  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  const std::string& problem() const { return problem_; }

private:
  std::string file_;
  std::string pointer_;
  std::string problem_;
};

}  // namespace dtsim
