// Shared entry-point wrapper for the atvoss command-line tools: every tool's main()
// builds a CLI11 app, then hands its body to run_cli, which turns errors into the
// exit codes every tool shares (2 = bad input or bad flags, 1 = any other failure; README.md,
// "Tools", states them for users; core/error.hpp maps an error to its code).
#pragma once

#include <arpa/inet.h>

#include <charconv>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

#include <CLI/CLI.hpp>

#include "core/error.hpp"

namespace atvoss::tools {

// A count, limit or seed, checked on its text against the variable's type: CLI11 would read
// "-1" into an unsigned as its largest value (an int limit of -1 ran a full sweep) and
// saturates a number past 2^64 without a word (a seed of 2^64 ran as 2^64-1). Refused with
// "must be >= 0, got -1" or "must be at most 18446744073709551615, got ...".
template <typename T>
CLI::Validator non_negative(const T&) {
  static_assert(std::is_integral_v<T>, "non_negative checks whole numbers");
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const auto first = s.find_first_not_of(" \t");
        if (first == std::string::npos) return std::string();  // CLI11 names the empty value
        if (s[first] == '-') return "must be >= 0, got " + s;
        T value{};
        const auto last = s.find_last_not_of(" \t") + 1;
        const auto [end, ec] = std::from_chars(s.data() + first, s.data() + last, value);
        if (ec == std::errc::result_out_of_range) {
          return "must be at most " + std::to_string(std::numeric_limits<T>::max()) + ", got " + s;
        }
        // CLI11 reads "1e23" as a double and then as a saturated whole number.
        if (ec == std::errc() && end != s.data() + last) return "must be a whole number in digits, got " + s;
        return std::string();  // other text: CLI11's own conversion refuses it
      },
      "NON-NEGATIVE");
}

// A real number in [lo, hi]. CLI::Range lets NaN through (every comparison with NaN is
// false): a worker started with --noise nan, then failed every task.
inline CLI::Validator real_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (end == s.c_str()) return std::string();  // not a number: CLI11's own conversion names it
        if (v >= lo && v <= hi) return std::string();
        std::ostringstream range;
        range << "must be a number in [" << lo << ", " << hi << "], got " << s;
        return range.str();
      },
      "REAL");
}

// An IP address for a --host flag (v4 or v6, no name lookup): "nothost" is refused while the
// flags are read, naming the flag, instead of by the server it is handed to.
inline CLI::Validator ip_address() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        unsigned char buf[sizeof(in6_addr)];
        if (::inet_pton(AF_INET, s.c_str(), buf) == 1 || ::inet_pton(AF_INET6, s.c_str(), buf) == 1) return "";
        return "expected an IP address such as 127.0.0.1 or ::1, got '" + s + "'";
      },
      "IP");
}

// CLI11 answers an unknown subcommand word with "A subcommand is required"; name the word
// and the subcommands there are instead. The word is the first one CLI11 left over, or else
// the first argument when it is not a flag. Other parse errors keep CLI11's text.
inline std::string parse_error_text(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  if (dynamic_cast<const CLI::RequiredError*>(&e) == nullptr && dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) {
    return e.what();
  }
  const auto all = app.get_subcommands([](const CLI::App*) { return true; });
  const auto remaining = app.remaining();
  std::string word = !remaining.empty() ? remaining.front() : argc > 1 ? std::string(argv[1]) : std::string();
  if (all.empty() || !app.get_subcommands().empty() || word.empty() || word.front() == '-') return e.what();
  std::string names;
  for (const CLI::App* sub : all) names += (names.empty() ? "" : ", ") + sub->get_name();
  return "unknown subcommand '" + word + "'; expected one of: " + names;
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
    std::cerr << "error: " << parse_error_text(app, e, argc, argv) << "\n";
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
