// Shared entry-point wrapper for the atvoss command-line tools: every tool's main()
// builds a CLI11 app, then hands its body to run_cli, which turns errors into the
// exit codes docs/architecture.md fixes (2 = bad input or bad flags, 1 = any other failure).
#pragma once

#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/error.hpp"

namespace atvoss::tools {

// A count, limit or seed: CLI11 would read "-1" into an unsigned as its largest value, and
// an int limit of -1 ran a full sweep. Refused with "must be >= 0, got -1".
inline CLI::Validator non_negative() {
  return CLI::Validator(
      [](std::string& s) {
        const auto first = s.find_first_not_of(" \t");
        return first != std::string::npos && s[first] == '-' ? "must be >= 0, got " + s : std::string();
      },
      "NON-NEGATIVE");
}

template <typename Body>
int run_cli(CLI::App& app, int argc, char** argv, Body&& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  try {
    return body();
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return exit_code_for(e);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace atvoss::tools
