// Error: the one exception type atvoss libraries throw at their boundaries.
// The kind tells a CLI how to exit (bad_input -> 2, anything else -> 1) and
// the message tells the user what to fix, naming the field and what was expected.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace atvoss {

enum class ErrorKind { bad_input, not_found, io, corrupt, protocol, internal };

std::string_view to_string(ErrorKind kind) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }
  bool is_bad_input() const noexcept { return kind_ == ErrorKind::bad_input; }

 private:
  ErrorKind kind_;
};

// Shorthand for the most common throw: input that the user must correct.
[[noreturn]] void throw_bad_input(const std::string& what);

// Exit code a CLI returns for an error: 2 = bad input, 1 = any other failure (README.md,
// "Tools", promises these to users; tools/cli_common.hpp's run_cli applies them).
// corrupt counts as bad input: it names a damaged file the user gave.
int exit_code_for(const Error& e) noexcept;

}  // namespace atvoss
