// Shared entry-point wrapper for the atvoss command-line tools: every tool's main()
// builds a CLI11 app, then hands its body to run_cli, which turns errors into the
// exit codes docs/architecture.md fixes (2 = bad input or bad flags, 1 = any other failure).
#pragma once

#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/error.hpp"

namespace atvoss::tools {

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
